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

/// Whether `number` is a futex wait on this architecture (`futex`, and `futex_time64`,
/// `futex_waitv`, `futex_wait` where the headers define them): the stall monitor's test for a wait
/// the kernel restarts unseen after a signal handler. By number, so that no name table is needed.
bool CLongThreadsShims_isFutexSystemCall(long number);
/// The calling thread's stack size in bytes (pthread_getattr_np), or 0 on failure.
size_t CLongThreadsShims_currentStackSize(void);
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
/// reply waiter may spin first, while that can help); a signal wakes every waiter. The state is a plain word so Swift can own its memory.
typedef struct {
    uint32_t state;     // 0 unset, 1 set, 2 unset with sleepers
    int32_t waiterCPU;  // the CPU its maker ran on when it made it (a reply's waiter), or -1
    int32_t replierCPU; // the CPU `eventReply` ran on, or -1
    const void *replier; // the replying thread's key (`setReplierKey`), or NULL
} CLongThreadsShims_Event;

/// Unset; notes the calling thread's CPU as the waiter's (`eventReply`, the linger).
void CLongThreadsShims_eventInit(CLongThreadsShims_Event *event);
/// Sets the event and wakes every waiter. Release ordering: writes before it are seen by waiters.
void CLongThreadsShims_eventSignal(CLongThreadsShims_Event *event);
/// `eventSignal` for a reply to a caller in `eventWaitForReply`: also tells the caller which CPU
/// replied, and from which thread (its key), and notes the caller's CPU for this thread's next
/// linger. See "Same CPU" in shims.c.
void CLongThreadsShims_eventReply(CLongThreadsShims_Event *event);
/// Names the calling thread in the replies it makes (`eventReply`): a LongThread's loop thread
/// sets its ThreadCore here, and its callers wait with the same key.
void CLongThreadsShims_setReplierKey(const void *key);
/// Sleeps until the event is set or `timeoutNanoseconds` passed (negative: no limit), without
/// spinning. Returns true when set. Acquire ordering.
bool CLongThreadsShims_eventWait(CLongThreadsShims_Event *event, int64_t timeoutNanoseconds);
/// Waits until the event is set, for a reply expected within microseconds: spins first while a
/// spare CPU lets the signalling thread run meanwhile and recent waits were short, then sleeps.
/// `replier`: the key of the thread expected to reply (`setReplierKey`), or NULL; a caller does
/// not spin when that thread's last reply to it came from the caller's own CPU. `replierAwake`:
/// the post found the replying thread draining (it needed no wake-up), so it is on a CPU; with no
/// spare CPU only such a wait spins (see "Under load" in shims.c). Acquire ordering.
void CLongThreadsShims_eventWaitForReply(CLongThreadsShims_Event *event, const void *replier, bool replierAwake);
/// pthread_join, spinning first (on `pthread_tryjoin_np`) while a spare CPU lets the thread end
/// meanwhile and recent joins were short, and not when the thread (its key `replier`, or NULL)
/// last replied to the caller from the caller's own CPU. Returns what the join returns.
int CLongThreadsShims_joinThread(pthread_t thread, const void *replier);
/// Caller: the thread with key `replier` runs on `cpu` (-1: unknown), as a reply from it would
/// have said. A creator learns it from its new thread's start, so that its first wait for a
/// reply does not spin on the CPU the new thread needs.
void CLongThreadsShims_noteReplier(const void *replier, int cpu);
/// Tests: the CPU the calling thread last noted for `replier` (a reply, or a start), or -1.
int CLongThreadsShims_notedReplierCPU(const void *replier);
/// True when the event is set (acquire).
bool CLongThreadsShims_eventIsSet(CLongThreadsShims_Event *event);

/// Loop thread, after it replied to a blocked caller and found no work: how long (ns) to look for
/// that caller's next request before sleeping; 0 when lingering cannot win (the caller was on
/// this CPU, or recent lingers lost); shorter with no spare CPU. Per thread.
int64_t CLongThreadsShims_lingerBudget(void);
/// How long (ns) `eventWaitForReply` would spin now on the calling thread for a reply from
/// `replier`, awake or not: 0 when spinning cannot help (no spare CPU and the replier asleep,
/// recent spins lost, or that replier's last reply came from this CPU). For tests.
int64_t CLongThreadsShims_replySpinBudget(const void *replier, bool replierAwake);
/// Tests: on the calling thread, the spins and the linger see a spare CPU when `spare` is 1, none
/// when 0, and read the machine's load as usual when -1 (the default).
void CLongThreadsShims_setSpareCPUOverride(int spare);
/// How long (ns) `joinThread` would spin now on the calling thread before it sleeps in the join
/// of the thread with key `replier`: 0 under the reply spin's rules. For tests.
int64_t CLongThreadsShims_joinSpinBudget(const void *replier);
/// Tests: forgets what the calling thread's reply spins, lingers and joins learnt (each then spins
/// as a new thread's first would, load permitting).
void CLongThreadsShims_resetSpinHistories(void);
/// The CPU the calling thread runs on (from the rseq area, else sched_getcpu), or -1.
int CLongThreadsShims_currentCPU(void);
/// Tests: on the calling thread, `CLongThreadsShims_lingerBudget` returns `nanoseconds` when
/// positive, 0 when negative, and decides as usual when 0 (the default).
void CLongThreadsShims_setLingerOverride(int64_t nanoseconds);
/// Records a linger that found work after `waitedNanoseconds`. (One that found none is judged by
/// `CLongThreadsShims_lingerRecordLate`, when the next request comes.)
void CLongThreadsShims_lingerWon(int64_t waitedNanoseconds);
/// After a linger that found no work: the next request came `lateNanoseconds` after it began.
void CLongThreadsShims_lingerRecordLate(int64_t lateNanoseconds);
/// Loop thread, after it replied to a blocked caller on its own CPU and found no work: how long
/// (ns) at most to sleep on its park bell for that caller's next request before it sleeps in the
/// run loop (see "Park" in shims.c); 0 when the caller was on another CPU or recent parks found no
/// work (but for probes). Per thread.
int64_t CLongThreadsShims_parkBudget(void);
/// Tests: on the calling thread, `CLongThreadsShims_parkBudget` returns `nanoseconds` when
/// positive, 0 when negative, and decides as usual when 0 (the default).
void CLongThreadsShims_setParkOverride(int64_t nanoseconds);
/// Records a park that ended after `waitedNanoseconds`, with work (`won`) or without.
void CLongThreadsShims_parkRecord(bool won, int64_t waitedNanoseconds);
/// The calling thread's last sample of whether a CPU is spare (the spins' and the linger's
/// signal), and when it was taken.
typedef struct {
    int64_t sampledAt;
    bool spareCPU;
} CLongThreadsShims_LoadSample;
/// The calling thread's sample, for a thread it creates (`CLongThreadsShims_adoptLoadSample`).
CLongThreadsShims_LoadSample CLongThreadsShims_currentLoadSample(void);
/// A new thread takes its creator's sample when it is newer than its own: it then spares its first
/// linger a `sched_getaffinity` (and maybe a /proc read). Sound only for a thread that runs on its
/// creator's CPUs (pthread_create's default: the affinity is inherited).
void CLongThreadsShims_adoptLoadSample(CLongThreadsShims_LoadSample sample);
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
