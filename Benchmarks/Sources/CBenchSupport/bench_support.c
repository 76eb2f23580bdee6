#define _GNU_SOURCE
#include "CBenchSupport.h"

#include <errno.h>
#include <linux/futex.h>
#include <fcntl.h>
#include <malloc.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <unistd.h>

// MARK: futex

int bench_futex_wait(uint32_t *word, uint32_t expected) {
    return (int)syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, expected, NULL, NULL, 0);
}

int bench_futex_wake(uint32_t *word, int count) {
    return (int)syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, count, NULL, NULL, 0);
}

uint32_t bench_load_acquire(const uint32_t *word) {
    return atomic_load_explicit((_Atomic uint32_t const *)word, memory_order_acquire);
}

void bench_store_release(uint32_t *word, uint32_t value) {
    atomic_store_explicit((_Atomic uint32_t *)word, value, memory_order_release);
}

// MARK: threads

pid_t bench_gettid(void) { return (pid_t)syscall(SYS_gettid); }

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
// PIDFD_THREAD is O_EXCL (linux/pidfd.h, 6.9); older headers lack the name.
int bench_thread_pidfd(pid_t tid) { return (int)syscall(SYS_pidfd_open, tid, O_EXCL); }

int bench_wait_thread_exit(int pidfd) {
    struct pollfd entry = { .fd = pidfd, .events = POLLIN };
    int rc;
    do { rc = poll(&entry, 1, -1); } while (rc < 0 && errno == EINTR);
    close(pidfd);
    return rc < 0 ? -1 : 0;
}

int bench_eventfd(void) { return eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC); }

int bench_epoll_create(void) { return epoll_create1(EPOLL_CLOEXEC); }

int bench_epoll_add_readable(int epfd, int fd) {
    struct epoll_event event = { .events = EPOLLIN, .data = { .fd = fd } };
    return epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &event);
}

int bench_epoll_wait(int epfd, int32_t *fds, int capacity, int timeoutMs) {
    struct epoll_event events[256];
    int got = epoll_wait(epfd, events, capacity < 256 ? capacity : 256, timeoutMs);
    for (int i = 0; i < got; i++) fds[i] = events[i].data.fd;
    return got;
}

// The mask the process started with, so that unpinning restores it rather than guessing "all CPUs".
static cpu_set_t initial_mask;
static pthread_once_t initial_mask_once = PTHREAD_ONCE_INIT;
static void read_initial_mask(void) {
    if (sched_getaffinity(0, sizeof initial_mask, &initial_mask) != 0) {
        CPU_ZERO(&initial_mask);
        for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) CPU_SET(cpu, &initial_mask);
    }
}

int bench_pin_tid(pid_t tid, int cpu) {
    pthread_once(&initial_mask_once, read_initial_mask);
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    return sched_setaffinity(tid, sizeof set, &set) == 0 ? 0 : errno;
}

int bench_pin_self(int cpu) { return bench_pin_tid(0, cpu); }

int bench_unpin_tid(pid_t tid) {
    pthread_once(&initial_mask_once, read_initial_mask);
    return sched_setaffinity(tid, sizeof initial_mask, &initial_mask) == 0 ? 0 : errno;
}

// MARK: the whole cost

uint64_t bench_compute(uint64_t iterations) {
    uint64_t value = iterations;
    for (uint64_t i = 0; i < iterations; i++) {
        value = value * 6364136223846793005ULL + 1442695040888963407ULL;
        __asm__ volatile("" : "+r"(value));  // one step per iteration: no closed form, no vectorizing
    }
    return value;
}

long bench_swap_timer_slack(unsigned long nanoseconds) {
    long previous = prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0);
    if (previous < 0 || prctl(PR_SET_TIMERSLACK, nanoseconds, 0, 0, 0) != 0) return -1;
    return previous;
}

uint64_t *bench_shared_counter(void) {
    void *page = mmap(NULL, sizeof(uint64_t), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (page == MAP_FAILED) return NULL;
    *(uint64_t *)page = 0;
    return page;
}

pid_t bench_spawn_spinner(uint64_t *counter) {
    pid_t pid = fork();
    if (pid != 0) return pid;
    // The child: C only, no allocation, no lock; dies with its parent as well.
    prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
    for (;;) {
        (void)bench_compute(1000);  // its asm barrier keeps every step
        __atomic_fetch_add(counter, 1000, __ATOMIC_RELAXED);
    }
}

uint64_t bench_load_counter(const uint64_t *counter) {
    return __atomic_load_n(counter, __ATOMIC_RELAXED);
}

int bench_kill_spinner(pid_t pid) {
    if (kill(pid, SIGKILL) != 0) return -1;
    int status;
    return waitpid(pid, &status, 0) == pid ? 0 : -1;
}

// MARK: memory

uint64_t bench_heap_in_use(void) {
    struct mallinfo2 info = mallinfo2();
    return (uint64_t)(info.uordblks + info.hblkhd);
}

// Counting allocations without LD_PRELOAD: this executable defines malloc and friends itself. The
// dynamic linker binds every library's malloc (Swift runtime, Foundation, CF, Dispatch, NIO) to the
// executable's definition first, and ours forwards to glibc's own entry points (__libc_malloc...),
// so the allocator, free and mallinfo2 stay glibc's. free is not wrapped: it needs no counting.
// A sanitizer brings its own malloc and free, which these would bypass (TSan crashes at start-up
// in them): under one, nothing is interposed and the counter stays at zero.
#if defined(__has_feature)
#if __has_feature(thread_sanitizer) || __has_feature(address_sanitizer)
#define BENCH_SANITIZED 1
#endif
#endif

static _Atomic int counting;
static _Atomic uint64_t allocations;

#ifndef BENCH_SANITIZED
extern void *__libc_malloc(size_t size);
extern void *__libc_calloc(size_t count, size_t size);
extern void *__libc_realloc(void *pointer, size_t size);
extern void *__libc_memalign(size_t alignment, size_t size);

static inline void count_one(void) {
    if (atomic_load_explicit(&counting, memory_order_relaxed))
        atomic_fetch_add_explicit(&allocations, 1, memory_order_relaxed);
}

void *malloc(size_t size) { count_one(); return __libc_malloc(size); }
void *calloc(size_t count, size_t size) { count_one(); return __libc_calloc(count, size); }
void *realloc(void *pointer, size_t size) { count_one(); return __libc_realloc(pointer, size); }
void *memalign(size_t alignment, size_t size) { count_one(); return __libc_memalign(alignment, size); }
void *aligned_alloc(size_t alignment, size_t size) { count_one(); return __libc_memalign(alignment, size); }

int posix_memalign(void **result, size_t alignment, size_t size) {
    if (alignment < sizeof(void *) || (alignment & (alignment - 1)) != 0) return EINVAL;
    count_one();
    void *pointer = __libc_memalign(alignment, size);
    if (pointer == NULL) return ENOMEM;
    *result = pointer;
    return 0;
}
#endif

void bench_alloc_counting(int enabled) {
    atomic_store_explicit(&counting, enabled, memory_order_seq_cst);
}

uint64_t bench_alloc_count(void) {
    return atomic_load_explicit(&allocations, memory_order_seq_cst);
}
