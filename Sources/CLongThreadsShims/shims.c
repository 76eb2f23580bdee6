#define _GNU_SOURCE
#include "CLongThreadsShims.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <linux/futex.h>
#include <poll.h>
#include <sched.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>
#if defined(__GLIBC__) && (defined(__x86_64__) || defined(__aarch64__)) && __has_include(<sys/rseq.h>)
#include <sys/rseq.h>
#define RSEQ_CPU_READABLE 1
#else
#define RSEQ_CPU_READABLE 0
#endif

int CLongThreadsShims_setCurrentThreadName(const char *name) {
    return pthread_setname_np(pthread_self(), name);
}

int CLongThreadsShims_currentThreadName(char *buffer, size_t size) {
    return pthread_getname_np(pthread_self(), buffer, size);
}

int32_t CLongThreadsShims_gettid(void) {
    return (int32_t)syscall(SYS_gettid);
}

long CLongThreadsShims_readOwnMemory(void *into, uintptr_t from, size_t count) {
    struct iovec local = { into, count };
    struct iovec remote = { (void *)from, count };
    return (long)process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
}

bool CLongThreadsShims_isFutexSystemCall(long number) {
#ifdef SYS_futex
    if (number == SYS_futex) return true;
#endif
#ifdef SYS_futex_time64
    if (number == SYS_futex_time64) return true;
#endif
#ifdef SYS_futex_waitv
    if (number == SYS_futex_waitv) return true;
#endif
#ifdef SYS_futex_wait
    if (number == SYS_futex_wait) return true;
#endif
    return false;
}

size_t CLongThreadsShims_currentStackSize(void) {
    pthread_attr_t attributes;
    if (pthread_getattr_np(pthread_self(), &attributes) != 0) return 0;
    size_t size = 0;
    pthread_attr_getstacksize(&attributes, &size);
    pthread_attr_destroy(&attributes);
    return size;
}

size_t CLongThreadsShims_minimumStack(const pthread_attr_t *attr) {
    // GLIBC_PRIVATE, so looked up, not linked: a libc without it (musl, a future glibc) falls back.
    typedef size_t (*MinimumStack)(const pthread_attr_t *);
    static MinimumStack function;
    static int looked;
    if (!__atomic_load_n(&looked, __ATOMIC_ACQUIRE)) {
        __atomic_store_n(&function, (MinimumStack)dlsym(RTLD_DEFAULT, "__pthread_get_minstack"), __ATOMIC_RELAXED);
        __atomic_store_n(&looked, 1, __ATOMIC_RELEASE);
    }
    MinimumStack found = __atomic_load_n(&function, __ATOMIC_RELAXED);
    if (found) return found(attr);
    long minimum = sysconf(_SC_THREAD_STACK_MIN);
    long page = sysconf(_SC_PAGESIZE);
    return (size_t)(minimum > 0 ? minimum : PTHREAD_STACK_MIN) + (size_t)(page > 0 ? page : 4096);
}

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define STACK_FACTOR 3
#elif __has_feature(thread_sanitizer)
#define STACK_FACTOR 2
#endif
#endif
#ifndef STACK_FACTOR
#if defined(__SANITIZE_ADDRESS__)
#define STACK_FACTOR 3
#elif defined(__SANITIZE_THREAD__)
#define STACK_FACTOR 2
#else
#define STACK_FACTOR 1
#endif
#endif

size_t CLongThreadsShims_sanitizerStackFactor(void) { return STACK_FACTOR; }

// MARK: - Stack high-water mark (tests)

static const unsigned char stackPaint = 0xA7;

// The usable stack of the calling thread: [low, top).
static int stackBounds(unsigned char **low, unsigned char **top) {
    pthread_attr_t attributes;
    if (pthread_getattr_np(pthread_self(), &attributes) != 0) return -1;
    void *address = NULL;
    size_t size = 0;
    pthread_attr_getstack(&attributes, &address, &size);
    pthread_attr_destroy(&attributes);
    *low = (unsigned char *)address;
    *top = *low + size;
    return 0;
}

__attribute__((noinline, no_sanitize("address", "thread")))
void CLongThreadsShims_paintStack(void) {
    unsigned char *low, *top;
    if (stackBounds(&low, &top) != 0) return;
    // Room for this frame's own locals; pthread_getattr_np's frames, below it, have returned.
    volatile unsigned char *end = (unsigned char *)__builtin_frame_address(0) - 512;
    for (volatile unsigned char *byte = low; byte < end; byte++) *byte = stackPaint;
}

__attribute__((noinline, no_sanitize("address", "thread")))
size_t CLongThreadsShims_stackHighWater(void) {
    unsigned char *low, *top;
    if (stackBounds(&low, &top) != 0) return 0;
    volatile unsigned char *byte = low;
    if (*byte != stackPaint) return 0;
    while (byte < top && *byte == stackPaint) byte++;
    return (size_t)(top - (unsigned char *)byte);
}

__attribute__((noinline))
size_t CLongThreadsShims_stackDepth(void) {
    unsigned char *low, *top;
    if (stackBounds(&low, &top) != 0) return 0;
    return (size_t)(top - (unsigned char *)__builtin_frame_address(0));
}

int CLongThreadsShims_eventfd(unsigned int initialValue) {
    return eventfd(initialValue, EFD_NONBLOCK | EFD_CLOEXEC);
}

void CLongThreadsShims_eventfdSignal(int fd) {
    uint64_t one = 1;
    while (write(fd, &one, sizeof one) < 0 && errno == EINTR) {}
}

int CLongThreadsShims_setCurrentThreadNice(int nice) {
    if (setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), nice) != 0) return errno;
    return 0;
}

int CLongThreadsShims_setCurrentThreadBatchOrIdle(int idle) {
    struct sched_param param = { .sched_priority = 0 };
    return pthread_setschedparam(pthread_self(), idle ? SCHED_IDLE : SCHED_BATCH, &param);
}

// struct sched_attr (linux/sched/types.h clashes with glibc's sched.h), SCHED_ATTR_SIZE_VER1.
struct lt_sched_attr {
    uint32_t size, sched_policy;
    uint64_t sched_flags;
    int32_t sched_nice;
    uint32_t sched_priority;
    uint64_t sched_runtime, sched_deadline, sched_period;
    uint32_t sched_util_min, sched_util_max;
};

int CLongThreadsShims_setCurrentThreadSlice(uint64_t nanoseconds) {
    struct lt_sched_attr attr;
    memset(&attr, 0, sizeof attr);
    if (syscall(SYS_sched_getattr, 0, &attr, sizeof attr, 0) != 0) return errno;
    // Only the fair class has slices (SCHED_OTHER; SCHED_BATCH is for throughput, not latency).
    if (attr.sched_policy != SCHED_OTHER) return 0;
    // Policy and nice as read, so only the slice changes.
    attr.size = sizeof attr;
    attr.sched_flags = 0;
    attr.sched_runtime = nanoseconds;
    return syscall(SYS_sched_setattr, 0, &attr, 0) == 0 ? 0 : errno;
}

uint64_t CLongThreadsShims_currentThreadSlice(void) {
    struct lt_sched_attr attr;
    memset(&attr, 0, sizeof attr);
    if (syscall(SYS_sched_getattr, 0, &attr, sizeof attr, 0) != 0) return 0;
    return attr.sched_runtime;
}

int CLongThreadsShims_setAttrRealtime(pthread_attr_t *attr, int policy, int priority) {
    int rc = pthread_attr_setinheritsched(attr, PTHREAD_EXPLICIT_SCHED);
    if (rc != 0) return rc;
    rc = pthread_attr_setschedpolicy(attr, policy == 2 ? SCHED_RR : SCHED_FIFO);
    if (rc != 0) return rc;
    struct sched_param param = { .sched_priority = priority };
    return pthread_attr_setschedparam(attr, &param);
}

// MARK: - Event

enum { UNSET = 0, SET = 1, SLEEPERS = 2 };

static inline void cpuRelax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

static int64_t nowNanoseconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

// MARK: Same CPU
//
// The mechanics of the waits whose policy is Swift's (`WaitPolicy`, `WaitLearning`): the CPU a
// thread runs on, the event's reply that carries it, the spins, and the storage a thread keeps
// what its waits learnt in (Swift has no thread-local variables).

/// The calling thread's CPU, or -1. Read from the rseq area glibc registers for every thread
/// (the kernel keeps its cpu_id current): under a nanosecond, where sched_getcpu took ~4 ns and
/// ~30 instructions. sched_getcpu when rseq is off (glibc.pthread.rseq=0) or unknown here.
static inline int currentCPU(void) {
#if RSEQ_CPU_READABLE
    if (__rseq_size > 0) {
        char *threadPointer;
#if defined(__x86_64__)
        __asm__("mov %%fs:0, %0" : "=r"(threadPointer)); // the TCB's pointer to itself
#else
        __asm__("mrs %0, tpidr_el0" : "=r"(threadPointer));
#endif
        const struct rseq *area = (const struct rseq *)(threadPointer + __rseq_offset);
        int cpu = (int)__atomic_load_n(&area->cpu_id, __ATOMIC_RELAXED);
        if (cpu >= 0) return cpu;
    }
#endif
    return sched_getcpu();
}

int CLongThreadsShims_currentCPU(void) {
    return currentCPU();
}

// Zeroed at each thread's start; Swift's `WaitLearning` lives here (it checks the size).
static __thread _Alignas(16) unsigned char waitLearning[CLongThreadsShims_waitLearningBytes];

void *CLongThreadsShims_waitLearning(void) {
    return waitLearning;
}

int CLongThreadsShims_usableCPUCount(void) {
    cpu_set_t set;
    return sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 1;
}

int64_t CLongThreadsShims_coarseClockResolution(void) {
    struct timespec resolution;
    if (clock_getres(CLOCK_MONOTONIC_COARSE, &resolution) != 0) return 0;
    return (int64_t)resolution.tv_sec * 1000000000 + resolution.tv_nsec;
}

void CLongThreadsShims_eventInit(CLongThreadsShims_Event *event) {
    __atomic_store_n(&event->state, UNSET, __ATOMIC_RELAXED);
    event->waiterCPU = currentCPU();
    event->replierCPU = -1;
    event->replier = NULL;
}

int32_t CLongThreadsShims_eventReply(CLongThreadsShims_Event *event, const void *replier) {
    // Read before the signal: the waiter may free the event once it is set.
    int32_t waiterCPU = event->waiterCPU;
    // Published by the release in eventSignal; read after the waiter's acquire.
    event->replierCPU = currentCPU();
    event->replier = replier;
    CLongThreadsShims_eventSignal(event);
    return waiterCPU;
}

void CLongThreadsShims_eventSignal(CLongThreadsShims_Event *event) {
    // Only a waiter that announced itself (SLEEPERS) costs a futex wake.
    if (__atomic_exchange_n(&event->state, SET, __ATOMIC_ACQ_REL) == SLEEPERS) {
        syscall(SYS_futex, &event->state, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
    }
}

bool CLongThreadsShims_eventIsSet(CLongThreadsShims_Event *event) {
    return __atomic_load_n(&event->state, __ATOMIC_ACQUIRE) == SET;
}

/// Sleeps on the futex until the event is set or `deadline` (monotonic ns, negative: none) passed.
static bool sleepUntilSet(CLongThreadsShims_Event *event, int64_t deadline) {
    for (;;) {
        uint32_t expected = UNSET;
        // Announce a sleeper; if it was already SLEEPERS, keep it; if SET, we are done.
        if (!__atomic_compare_exchange_n(&event->state, &expected, SLEEPERS, false,
                                         __ATOMIC_ACQUIRE, __ATOMIC_ACQUIRE)) {
            if (expected == SET) return true;
        }
        struct timespec ts, *tsp = NULL;
        if (deadline >= 0) {
            int64_t left = deadline - nowNanoseconds();
            if (left <= 0) return __atomic_load_n(&event->state, __ATOMIC_ACQUIRE) == SET;
            ts.tv_sec = left / 1000000000;
            ts.tv_nsec = left % 1000000000;
            tsp = &ts;
        }
        syscall(SYS_futex, &event->state, FUTEX_WAIT_PRIVATE, SLEEPERS, tsp, NULL, 0);
        if (__atomic_load_n(&event->state, __ATOMIC_ACQUIRE) == SET) return true;
    }
}

bool CLongThreadsShims_eventWait(CLongThreadsShims_Event *event, int64_t timeoutNanoseconds) {
    if (__atomic_load_n(&event->state, __ATOMIC_ACQUIRE) == SET) return true;
    return sleepUntilSet(event, timeoutNanoseconds < 0 ? -1 : nowNanoseconds() + timeoutNanoseconds);
}

/// Spins until `done(context)` holds (looked at every `lookEvery` pauses) or `budget` ns since
/// `start` have passed. Returns how long it waited when `done` came true, else -1.
static inline int64_t spinUntil(int64_t start, int64_t budget, unsigned lookEvery,
                                bool (*done)(void *), void *context) {
    for (unsigned i = 1;; i++) {
        if (i % lookEvery == 0 && done(context)) return nowNanoseconds() - start;
        // The clock every 32 pauses: a pause is 10-140 cycles depending on the CPU.
        if (i % 32 == 0 && nowNanoseconds() - start >= budget) return -1;
        cpuRelax();
    }
}

static bool eventIsSet(void *event) {
    return __atomic_load_n(&((CLongThreadsShims_Event *)event)->state, __ATOMIC_ACQUIRE) == SET;
}

int64_t CLongThreadsShims_eventSpin(CLongThreadsShims_Event *event, int64_t start, int64_t budgetNanoseconds) {
    return spinUntil(start, budgetNanoseconds, 1, eventIsSet, event);
}

typedef struct {
    pthread_t thread;
    int result;
} JoinAttempt;

static bool threadJoined(void *attempt) {
    JoinAttempt *join = attempt;
    join->result = pthread_tryjoin_np(join->thread, NULL);
    return join->result != EBUSY;
}

int64_t CLongThreadsShims_joinSpin(pthread_t thread, int64_t start, int64_t budgetNanoseconds, int *result) {
    // `pthread_tryjoin_np` only reads the tid the kernel clears at the thread's exit: no system
    // call until it has ended. Every 8th pause: it is a call.
    JoinAttempt attempt = { thread, EBUSY };
    int64_t waited = spinUntil(start, budgetNanoseconds, 8, threadJoined, &attempt);
    *result = attempt.result;
    return waited;
}

void CLongThreadsShims_relax(unsigned count) {
    for (unsigned i = 0; i < count; i++) cpuRelax();
}

// MARK: - epoll

int CLongThreadsShims_epollCreate(void) {
    int fd = epoll_create1(EPOLL_CLOEXEC);
    return fd < 0 ? -errno : fd;
}

// One-shot, re-armed after each callback. CF waits on `epfd` edge-triggered; a level-triggered
// inner entry that stays ready after a partial read never wakes it again (the entry stays on the
// inner ready list, so nothing new is queued). Re-arming a one-shot entry that is still ready
// queues it afresh and wakes CF: level-triggered behaviour for the handler, one pass at a time.
static struct epoll_event makeEvent(int fd, unsigned int events) {
    struct epoll_event event = { .events = EPOLLONESHOT, .data = { .fd = fd } };
    if (events & 1) event.events |= EPOLLIN | EPOLLRDHUP;
    if (events & 2) event.events |= EPOLLOUT;
    return event;
}

int CLongThreadsShims_epollAdd(int epfd, int fd, unsigned int events) {
    struct epoll_event event = makeEvent(fd, events);
    return epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &event) == 0 ? 0 : errno;
}

int CLongThreadsShims_epollRearm(int epfd, int fd, unsigned int events) {
    struct epoll_event event = makeEvent(fd, events);
    return epoll_ctl(epfd, EPOLL_CTL_MOD, fd, &event) == 0 ? 0 : errno;
}

void CLongThreadsShims_epollRemove(int epfd, int fd) {
    (void)epoll_ctl(epfd, EPOLL_CTL_DEL, fd, NULL);
}

static uint32_t eventBits(uint32_t events) {
    uint32_t result = 0;
    if (events & (EPOLLIN | EPOLLRDHUP)) result |= 1;
    if (events & EPOLLOUT) result |= 2;
    if (events & EPOLLHUP) result |= 4;
    if (events & EPOLLERR) result |= 8;
    return result;
}

int CLongThreadsShims_epollCollect(int epfd, int32_t *descriptors, uint32_t *events, int capacity) {
    struct epoll_event ready[64];
    int count = 0;
    while (count < capacity) {
        int asked = capacity - count < 64 ? capacity - count : 64;
        int got = epoll_wait(epfd, ready, asked, 0);
        if (got <= 0) break;
        for (int i = 0; i < got; i++) {
            descriptors[count] = ready[i].data.fd;
            events[count] = eventBits(ready[i].events);
            count++;
        }
        if (got < asked) break;
    }
    return count;
}

// MARK: - Doorbell

uint32_t CLongThreadsShims_doorbellValue(CLongThreadsShims_Doorbell *bell) {
    return __atomic_load_n(&bell->value, __ATOMIC_ACQUIRE);
}

void CLongThreadsShims_doorbellRing(CLongThreadsShims_Doorbell *bell) {
    __atomic_add_fetch(&bell->value, 1, __ATOMIC_ACQ_REL);
    syscall(SYS_futex, &bell->value, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

void CLongThreadsShims_doorbellWait(CLongThreadsShims_Doorbell *bell, uint32_t seen, int64_t timeoutNanoseconds) {
    struct timespec ts, *tsp = NULL;
    if (timeoutNanoseconds >= 0) {
        ts.tv_sec = timeoutNanoseconds / 1000000000;
        ts.tv_nsec = timeoutNanoseconds % 1000000000;
        tsp = &ts;
    }
    if (__atomic_load_n(&bell->value, __ATOMIC_ACQUIRE) != seen) return;
    syscall(SYS_futex, &bell->value, FUTEX_WAIT_PRIVATE, seen, tsp, NULL, 0);
}

uint64_t CLongThreadsShims_monotonicNanoseconds(void) {
    return (uint64_t)nowNanoseconds();
}

int CLongThreadsShims_freeSlots(int first) {
    struct rlimit limit;
    if (first < 0 || getrlimit(RLIMIT_NOFILE, &limit) != 0) return -1;
    struct pollfd slots[CLongThreadsShims_slotWindow];
    nfds_t count = 0;
    for (int index = 0; index < CLongThreadsShims_slotWindow; index++) {
        // Only numbers a descriptor may have: poll's EINVAL (more entries than the limit) is
        // then impossible too, since every entry is below it.
        if (limit.rlim_cur != RLIM_INFINITY && (rlim_t)first + (rlim_t)index >= limit.rlim_cur) break;
        slots[count].fd = first + index;
        slots[count].events = 0;
        slots[count].revents = 0;
        count++;
    }
    if (count == 0) return 0;
    if (poll(slots, count, 0) < 0) return -1;
    int free = 0;
    for (nfds_t index = 0; index < count; index++) {
        if (slots[index].revents & POLLNVAL) free++;
    }
    return free;
}

int CLongThreadsShims_closeRange(unsigned int first, unsigned int last) {
#ifdef SYS_close_range
    if (syscall(SYS_close_range, first, last, 0) == 0) return 0;
    return errno;
#else
    return ENOSYS;
#endif
}
