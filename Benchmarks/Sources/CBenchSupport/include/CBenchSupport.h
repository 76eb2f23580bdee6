#ifndef CBENCHSUPPORT_H
#define CBENCHSUPPORT_H

#include <stdint.h>
#include <sys/types.h>

// MARK: futex (the round-trip floor)

/// Sleeps while `*word == expected` (FUTEX_WAIT_PRIVATE). Returns 0, or -1 with errno.
int bench_futex_wait(uint32_t *word, uint32_t expected);
/// Wakes up to `count` sleepers on `word` (FUTEX_WAKE_PRIVATE).
int bench_futex_wake(uint32_t *word, int count);
uint32_t bench_load_acquire(const uint32_t *word);
void bench_store_release(uint32_t *word, uint32_t value);

// MARK: threads

/// The kernel thread id of the caller (what /proc/self/task/TID names).
pid_t bench_gettid(void);
/// Pins the calling thread to one CPU. Returns 0 or an errno value.
int bench_pin_self(int cpu);
/// Pins a thread, by kernel id, to one CPU. Returns 0 or an errno value.
int bench_pin_tid(pid_t tid, int cpu);
/// Restores a thread (by kernel id, 0 = caller) to the affinity the process started with.
int bench_unpin_tid(pid_t tid);

/// A descriptor that becomes readable when the kernel thread `tid` has exited
/// (pidfd_open with PIDFD_THREAD, Linux 6.9), or -1 with errno. For a thread that cannot be
/// joined (Foundation's `Thread` is detached).
int bench_thread_pidfd(pid_t tid);
/// Sleeps until `pidfd` is readable (its thread has exited), then closes it. 0, or -1 with errno.
int bench_wait_thread_exit(int pidfd);

/// eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC): a pollable descriptor for the watch figures. -1 on failure.
int bench_eventfd(void);

/// epoll for the echo client: create (close-on-exec), add `fd` for input, and wait up to
/// `timeoutMs` for ready descriptors (written to `fds`, at most `capacity`). -1 on failure.
int bench_epoll_create(void);
int bench_epoll_add_readable(int epfd, int fd);
int bench_epoll_wait(int epfd, int32_t *fds, int capacity, int timeoutMs);

// MARK: the whole cost

/// `iterations` steps of a 64-bit LCG, returned so the optimizer keeps them: a caller's
/// computation between requests, in registers only (no memory traffic, no system call).
uint64_t bench_compute(uint64_t iterations);
/// Sets the calling thread's timer slack (PR_SET_TIMERSLACK), so that a nanosleep of 20 µs
/// sleeps about 20 µs and not up to the default 50 µs more. Returns the previous slack in
/// nanoseconds, or -1 with errno.
long bench_swap_timer_slack(unsigned long nanoseconds);
/// Forks a CPU-bound neighbour process: it runs `bench_compute` in rounds of 1,000 steps and
/// adds 1,000 to `*counter` (memory shared with this process, see `bench_shared_counter`) after
/// each, until killed. The child runs C only (nothing that could take a lock another thread of
/// this process held at the fork). Returns the child's pid, or -1 with errno.
pid_t bench_spawn_spinner(uint64_t *counter);
/// A word in an anonymous shared mapping (survives fork, visible to both processes), or NULL.
uint64_t *bench_shared_counter(void);
/// Relaxed atomic read of a counter the spinner writes.
uint64_t bench_load_counter(const uint64_t *counter);
/// SIGKILLs the child and reaps it. 0, or -1 with errno.
int bench_kill_spinner(pid_t pid);

// MARK: memory

/// Bytes the allocator has handed out and not yet taken back (mallinfo2: arena + mmapped chunks).
uint64_t bench_heap_in_use(void);
/// Allocation calls (malloc, calloc, realloc, memalign family) counted while counting is on,
/// process-wide. The counter is a relaxed atomic: it costs nothing measurable when off.
void bench_alloc_counting(int enabled);
uint64_t bench_alloc_count(void);

#endif
