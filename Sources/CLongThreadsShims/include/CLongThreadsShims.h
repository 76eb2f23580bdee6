// Small C helpers for LongThreads: Linux calls that Glibc's Swift module hides, and the one-shot
// event the blocking waits are built on. Every symbol carries the module prefix.
#ifndef CLONGTHREADSSHIMS_H
#define CLONGTHREADSSHIMS_H

#include <pthread.h>
#include <stdint.h>
#include <stdbool.h>
#include <stddef.h>

/// Sets the calling thread's kernel name (truncated by the caller to 15 bytes).
int CLongThreadsShims_setCurrentThreadName(const char *name);
/// Copies the calling thread's kernel name into `buffer` (16 bytes hold any); returns 0 or errno.
int CLongThreadsShims_currentThreadName(char *buffer, size_t size);
/// The kernel thread id of the calling thread.
int32_t CLongThreadsShims_gettid(void);
/// Copies `count` bytes of this process's memory at `from` into `into` through
/// process_vm_readv: an unmapped page is an error (-1 or a short count), not a fault.
long CLongThreadsShims_readOwnMemory(void *into, uintptr_t from, size_t count);

/// Whether `number` is a futex wait on this architecture (`futex`, and `futex_time64`,
/// `futex_waitv`, `futex_wait` where the headers define them): the stall monitor's test for a wait
/// the kernel restarts unseen after a signal handler. By number, so that no name table is needed.
bool CLongThreadsShims_isFutexSystemCall(long number);
/// The calling thread's stack size in bytes (pthread_getattr_np), or 0 on failure.
size_t CLongThreadsShims_currentStackSize(void);
/// What glibc itself takes of a new thread's stack made with `attr`: its static TLS, its thread
/// descriptor, a guard page's worth and PTHREAD_STACK_MIN (glibc's `__pthread_get_minstack`, found
/// at run time as Rust's std finds it; without it, PTHREAD_STACK_MIN plus a page).
size_t CLongThreadsShims_minimumStack(const pthread_attr_t *attr);
/// How many times larger a sanitizer makes stack frames in this build: 1 without one; more with
/// AddressSanitizer (redzones around each local) or ThreadSanitizer (its instrumented calls).
size_t CLongThreadsShims_sanitizerStackFactor(void);
/// Test support: fills the calling thread's unused stack, from the lowest usable byte up to 4 KiB
/// under the caller's frame, with a pattern, so `stackHighWater` can tell how deep it was used.
void CLongThreadsShims_paintStack(void);
/// Test support: bytes between the top of the calling thread's stack and the deepest byte changed
/// since `paintStack`, or 0 if it was never painted.
size_t CLongThreadsShims_stackHighWater(void);
/// Test support: bytes between the top of the calling thread's stack and the caller's frame.
size_t CLongThreadsShims_stackDepth(void);
/// eventfd(2), non-blocking and close-on-exec.
int CLongThreadsShims_eventfd(unsigned int initialValue);
/// Adds 1 to the eventfd `fd` (eventfd_write), retrying on EINTR. An error (only a full counter,
/// after 2^64 - 2 unread writes, or a closed descriptor) is ignored: a reader is already due.
void CLongThreadsShims_eventfdSignal(int fd);
/// setpriority(PRIO_PROCESS, tid, nice) for the calling thread; returns 0 or errno.
int CLongThreadsShims_setCurrentThreadNice(int nice);
/// pthread_setschedparam for the calling thread with policy SCHED_BATCH (1) or SCHED_IDLE (2); returns 0 or errno.
int CLongThreadsShims_setCurrentThreadBatchOrIdle(int idle);
/// Asks the scheduler for a time slice of `nanoseconds` for the calling thread (Linux 6.12+ EEVDF:
/// `sched_attr.sched_runtime`; older kernels ignore it), keeping its policy and nice value; does
/// nothing unless the thread is `SCHED_OTHER`. Returns 0 or an errno.
int CLongThreadsShims_setCurrentThreadSlice(uint64_t nanoseconds);
/// The calling thread's requested slice (`sched_runtime`), or 0.
uint64_t CLongThreadsShims_currentThreadSlice(void);
/// Fills `attr` for an explicit real-time policy: 1 = SCHED_FIFO, 2 = SCHED_RR; returns 0 or errno.
int CLongThreadsShims_setAttrRealtime(pthread_attr_t *attr, int policy, int priority);

/// A one-shot event: unset until signalled once, then set for good. Waiters sleep on a futex (a
/// reply waiter may spin first: `eventSpin`); a signal wakes every waiter. The state is a plain
/// word so Swift can own its memory. When a wait spins, and for how long, is Swift's
/// (`WaitPolicy`).
typedef struct {
    uint32_t state;     // 0 unset, 1 set, 2 unset with sleepers
    int32_t waiterCPU;  // the CPU its maker ran on when it made it (a reply's waiter), or -1
    int32_t replierCPU; // the CPU `eventReply` ran on, or -1
    const void *replier; // the replying thread's key, or NULL
} CLongThreadsShims_Event;

/// Unset; notes the calling thread's CPU as the waiter's.
void CLongThreadsShims_eventInit(CLongThreadsShims_Event *event);
/// Sets the event and wakes every waiter. Release ordering: writes before it are seen by waiters.
void CLongThreadsShims_eventSignal(CLongThreadsShims_Event *event);
/// `eventSignal` for a reply: also records the calling thread's CPU and `replier` (its key) in
/// the event for its waiter. Returns the waiter's CPU (`waiterCPU`), read before the signal.
int32_t CLongThreadsShims_eventReply(CLongThreadsShims_Event *event, const void *replier);
/// Sleeps until the event is set or `timeoutNanoseconds` passed (negative: no limit), without
/// spinning. Returns true when set. Acquire ordering.
bool CLongThreadsShims_eventWait(CLongThreadsShims_Event *event, int64_t timeoutNanoseconds);
/// Spins (CPU pause hints, the clock every 32) until the event is set or `budgetNanoseconds`
/// since `start` (monotonic ns) passed. Returns the nanoseconds waited when set (acquire), else -1.
int64_t CLongThreadsShims_eventSpin(CLongThreadsShims_Event *event, int64_t start, int64_t budgetNanoseconds);
/// True when the event is set (acquire).
bool CLongThreadsShims_eventIsSet(CLongThreadsShims_Event *event);
/// Spins on `pthread_tryjoin_np(thread)` until the thread is joined or `budgetNanoseconds` since
/// `start` passed. Returns the nanoseconds waited and sets `result` to the join's result when
/// joined; else returns -1 (`result` EBUSY), and the caller joins with `pthread_join`.
int64_t CLongThreadsShims_joinSpin(pthread_t thread, int64_t start, int64_t budgetNanoseconds, int *result);
/// The CPU the calling thread runs on (from the rseq area, else sched_getcpu), or -1.
int CLongThreadsShims_currentCPU(void);
/// The CPUs the calling thread may run on (sched_getaffinity), 1 when it cannot tell.
int CLongThreadsShims_usableCPUCount(void);
/// The resolution of CLOCK_MONOTONIC_COARSE in ns (the scheduler tick, 1/HZ), or 0.
int64_t CLongThreadsShims_coarseClockResolution(void);
/// Bytes of the calling thread's wait-learning storage.
enum { CLongThreadsShims_waitLearningBytes = 256 };
/// The calling thread's wait-learning storage (Swift's `WaitLearning`): 16-byte aligned, zeroed
/// when the thread starts, never touched by C.
void *CLongThreadsShims_waitLearning(void);
/// `count` spin-wait hints to the CPU (`pause`): a few nanoseconds each, the sibling hyperthread runs.
void CLongThreadsShims_relax(unsigned count);

// MARK: - epoll for descriptor sources

/// epoll_create1(EPOLL_CLOEXEC); returns the descriptor or -errno.
int CLongThreadsShims_epollCreate(void);
/// Adds `fd` to `epfd` for the events asked (1 readable, 2 writable), one-shot; returns 0 or errno.
int CLongThreadsShims_epollAdd(int epfd, int fd, unsigned int events);
/// Re-arms a one-shot `fd` in `epfd` for `events`: if it is still ready, the kernel reports `epfd`
/// ready again. Returns 0 or errno.
int CLongThreadsShims_epollRearm(int epfd, int fd, unsigned int events);
/// Removes `fd` from `epfd` (an error, such as a descriptor closed meanwhile, is ignored).
void CLongThreadsShims_epollRemove(int epfd, int fd);
/// Takes up to `capacity` ready entries of `epfd` without waiting: their descriptors, and their
/// events as 1 readable | 2 writable | 4 hang-up | 8 error. Returns how many. Entries are one-shot,
/// so each descriptor is reported at most once until it is re-armed.
int CLongThreadsShims_epollCollect(int epfd, int32_t *descriptors, uint32_t *events, int capacity);

// MARK: - Doorbell

/// A counter a thread sleeps on until it changes: ring() bumps it and wakes the sleepers.
typedef struct {
    uint32_t value;
} CLongThreadsShims_Doorbell;

uint32_t CLongThreadsShims_doorbellValue(CLongThreadsShims_Doorbell *bell);
void CLongThreadsShims_doorbellRing(CLongThreadsShims_Doorbell *bell);
/// Sleeps while the value equals `seen`, at most `timeoutNanoseconds` (negative: no limit).
void CLongThreadsShims_doorbellWait(CLongThreadsShims_Doorbell *bell, uint32_t seen, int64_t timeoutNanoseconds);

/// CLOCK_MONOTONIC in nanoseconds.
uint64_t CLongThreadsShims_monotonicNanoseconds(void);

/// close_range(2) of the descriptors `first` through `last`: 0, or an errno (ENOSYS on a kernel
/// older than 5.9, where the caller closes them one by one).
int CLongThreadsShims_closeRange(unsigned int first, unsigned int last);

/// How many of the CLongThreadsShims_slotWindow descriptor numbers from `first` are free (not
/// open) and below the soft RLIMIT_NOFILE, looked up without taking any (getrlimit, and one
/// poll(2), which reports a closed descriptor as POLLNVAL); -1 when it cannot tell.
enum { CLongThreadsShims_slotWindow = 8 };
int CLongThreadsShims_freeSlots(int first);

#include "CLongThreadsShims_StackCapture.h"

#endif
