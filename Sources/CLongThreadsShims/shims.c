#define _GNU_SOURCE
#include "CLongThreadsShims.h"

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
// A spin or a linger wins only if the thread it waits for runs meanwhile on another CPU. When the
// caller and the loop thread share a CPU (the scheduler puts a ping-pong pair together even with
// another CPU idle), the one spinning holds the CPU the other needs: the caller's spin only ends
// at its budget, and a linger keeps the caller it waits for off the CPU (a linger that "lost" by
// a little even lengthens the next). So a reply carries the replier's CPU to the caller, and the
// caller's CPU (noted when it made the event) to the replier's next linger; each skips its spin
// while they match, and sleeps at once. A hint, as the kernel's "owner on a CPU" is: either may
// move right after; a wrong guess costs one spin or one wake-up. The CPU is read from the rseq
// area: under a nanosecond (`currentCPU`).
// The caller keeps the last reply's CPU with its replier's key, so a caller taking turns between
// LongThreads on different CPUs never applies one's CPU to another (it then spins as before).
static __thread const void *lastReplier;  // caller: the thread its last reply came from
static __thread int lastReplierCPU = -1;  // caller: the CPU that reply came from
static __thread const void *replierKey;   // loop thread: its key in its replies
static __thread int lastWaiterCPU = -1;   // loop thread: the CPU of the caller it last answered

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

static inline bool onCPU(int cpu) {
    return cpu >= 0 && currentCPU() == cpu;
}

void CLongThreadsShims_eventInit(CLongThreadsShims_Event *event) {
    __atomic_store_n(&event->state, UNSET, __ATOMIC_RELAXED);
    event->waiterCPU = currentCPU();
    event->replierCPU = -1;
    event->replier = NULL;
}

void CLongThreadsShims_setReplierKey(const void *key) {
    replierKey = key;
}

void CLongThreadsShims_eventReply(CLongThreadsShims_Event *event) {
    lastWaiterCPU = event->waiterCPU;
    // Published by the release in eventSignal; read after the waiter's acquire.
    event->replierCPU = currentCPU();
    event->replier = replierKey;
    CLongThreadsShims_eventSignal(event);
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

// MARK: Adaptive spin
//
// A reply from a LongThread that is awake arrives within a few microseconds; sleeping on the
// futex instead costs a system call on each side plus a scheduler wake-up of the caller (tens of
// microseconds across CPUs on a VM). So a caller expecting a reply spins first, but only while
// spinning can win, like the kernel's adaptive mutexes, which spin only while the owner is on a
// CPU. The signal here: whether every runnable thread has a CPU. With no spare CPU the thread we
// wait for is runnable but queued behind others, and a spinner only keeps it (or a neighbour) off
// a CPU; sleeping hands the CPU over at once and the futex wake brings us back. Never
// sched_yield: on a busy CPU it gives a CPU-bound neighbour a whole slice (a 4 ms tick measured).
//
// Checked from cached samples, at most one per LOAD_SAMPLE_NANOSECONDS:
// - the CPUs the caller may run on (sched_getaffinity, per thread; one CPU: never spin, as the
//   thread we wait for can only run when we stop);
// - the system's runnable threads at that instant (not the load average: /proc/loadavg's fourth
//   field, which counts the reader and a woken loop thread; one sample shared by all threads, as
//   reading it costs microseconds): spin only while they do not outnumber those CPUs.
// The spin is bounded by what a round trip costs: three times the recent reply time of spins that
// won (a moving average, so a reply a little slower than usual is still caught), at least
// SPIN_MIN and at most SPIN_MAX_NANOSECONDS. And it stops while it keeps losing (a reply behind
// 100 µs of work is not worth spinning for; the futex's cost is small beside it): when fewer than
// a quarter of recent spins won, only every PROBE_INTERVAL-th wait spins, to notice a change.
#define SPIN_MAX_NANOSECONDS 15000
#define SPIN_MIN_NANOSECONDS 4000
#define LINGER_MAX_NANOSECONDS 80000
#define LOAD_SAMPLE_NANOSECONDS 2000000
#define WIN_SCALE 256
#define PROBE_INTERVAL 16

/// What one kind of spin on one thread learnt: how long a won spin took, and how often it won.
typedef struct {
    int64_t average; // moving average of the waits that won
    int wins;        // moving average of won spins, out of WIN_SCALE
    unsigned sinceProbe;
} SpinHistory;

static __thread SpinHistory replies = { SPIN_MIN_NANOSECONDS, WIN_SCALE, 0 };
static __thread SpinHistory lingers = { SPIN_MIN_NANOSECONDS, WIN_SCALE, 0 };
#define JOIN_SPIN_MIN_NANOSECONDS 20000 // the join's own floor (see "A thread's end")
static __thread SpinHistory joins = { JOIN_SPIN_MIN_NANOSECONDS, WIN_SCALE, 0 };
static __thread SpinHistory parks = { SPIN_MIN_NANOSECONDS, WIN_SCALE, 0 };
static __thread int64_t loadSampledAt = INT64_MIN / 2;
static __thread bool spareCPU;
// The system's runnable count, shared by every thread: a thread's first spin or linger (a new
// LongThread's first reply) then costs no /proc read, which took tens of microseconds of its life.
static int64_t runnableSampledAt = INT64_MIN / 2;
static int sharedRunnable = -1;

/// Runnable threads system-wide, from /proc/loadavg ("0.10 0.20 0.30 2/345 6789"), or -1.
/// Opened and closed each time: a descriptor held for the process's life would show in every
/// descriptor census (and one sample every few milliseconds makes the open cheap enough).
static int readRunnableThreads(void) {
    int fd = open("/proc/loadavg", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    char text[128];
    ssize_t length = read(fd, text, sizeof text - 1);
    close(fd);
    if (length <= 0) return -1;
    text[length] = 0;
    // Skip three fields to the "running/total" one.
    char *cursor = text;
    for (int field = 0; field < 3; field++) {
        cursor = strchr(cursor, ' ');
        if (cursor == NULL) return -1;
        cursor++;
    }
    return atoi(cursor);
}

/// The runnable count, read again when the shared sample is older than LOAD_SAMPLE_NANOSECONDS.
/// Threads that refresh it at once each read /proc: harmless.
static int runnableThreads(int64_t now) {
    if (now - __atomic_load_n(&runnableSampledAt, __ATOMIC_ACQUIRE) < LOAD_SAMPLE_NANOSECONDS) {
        return __atomic_load_n(&sharedRunnable, __ATOMIC_RELAXED);
    }
    int runnable = readRunnableThreads();
    __atomic_store_n(&sharedRunnable, runnable, __ATOMIC_RELAXED);
    __atomic_store_n(&runnableSampledAt, now, __ATOMIC_RELEASE);
    return runnable;
}

static void sampleLoad(int64_t now) {
    cpu_set_t set;
    int usableCPUs = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 1;
    int runnable = usableCPUs > 1 ? runnableThreads(now) : -1;
    spareCPU = usableCPUs > 1 && runnable >= 0 && runnable <= usableCPUs;
    loadSampledAt = now;
}

CLongThreadsShims_LoadSample CLongThreadsShims_currentLoadSample(void) {
    return (CLongThreadsShims_LoadSample){ loadSampledAt, spareCPU };
}

void CLongThreadsShims_adoptLoadSample(CLongThreadsShims_LoadSample sample) {
    if (sample.sampledAt <= loadSampledAt) return;
    loadSampledAt = sample.sampledAt;
    spareCPU = sample.spareCPU;
}

static __thread int spareCPUOverride = -1;

void CLongThreadsShims_setSpareCPUOverride(int spare) {
    spareCPUOverride = spare;
}

/// Whether a CPU is spare, from the sample (taken again when older than LOAD_SAMPLE_NANOSECONDS).
static bool spareCPUNow(int64_t now) {
    if (spareCPUOverride >= 0) return spareCPUOverride != 0;
    if (now - loadSampledAt >= LOAD_SAMPLE_NANOSECONDS) sampleLoad(now);
    return spareCPU;
}

/// How long to spin, from what this kind of spin learnt (at most `most`): 0 while it keeps
/// losing, but for every PROBE_INTERVAL-th try.
static int64_t learntBudget(SpinHistory *history, int64_t most) {
    if (history->wins < WIN_SCALE / 4 && ++history->sinceProbe % PROBE_INTERVAL != 0) return 0;
    int64_t budget = 3 * history->average;
    if (budget < SPIN_MIN_NANOSECONDS) budget = SPIN_MIN_NANOSECONDS;
    return budget > most ? most : budget;
}

/// How long to spin now, given what this kind of spin learnt: 0 when spinning cannot help.
static int64_t spinBudget(SpinHistory *history, int64_t now, int64_t most) {
    return spareCPUNow(now) ? learntBudget(history, most) : 0;
}

static void recordSpin(SpinHistory *history, bool won, int64_t waitedNanoseconds) {
    history->wins += ((won ? WIN_SCALE : 0) - history->wins) / 8;
    if (won) history->average += (waitedNanoseconds - history->average) / 8;
}

/// Spins until `done(context)` holds (looked at every `lookEvery` pauses) or `budget` ns since
/// `start` have passed, and records which in `history`. Returns whether `done` came true.
static inline bool spinUntil(SpinHistory *history, int64_t start, int64_t budget, unsigned lookEvery,
                             bool (*done)(void *), void *context) {
    for (unsigned i = 1;; i++) {
        if (i % lookEvery == 0 && done(context)) {
            recordSpin(history, true, nowNanoseconds() - start);
            return true;
        }
        // The clock every 32 pauses: a pause is 10-140 cycles depending on the CPU.
        if (i % 32 == 0 && nowNanoseconds() - start >= budget) break;
        cpuRelax();
    }
    recordSpin(history, false, 0);
    return false;
}

static bool eventIsSet(void *event) {
    return __atomic_load_n(&((CLongThreadsShims_Event *)event)->state, __ATOMIC_ACQUIRE) == SET;
}

/// The replier last ran on this CPU: spinning would only keep it off (see "Same CPU").
static bool replierSharesCPU(const void *replier) {
    return replier != NULL && replier == lastReplier && onCPU(lastReplierCPU);
}

// MARK: Under load
//
// With no spare CPU a spin usually holds a CPU that the thread it waits for, or a neighbour,
// needs (see "Adaptive spin"). Not while that thread is on another CPU right now, which is when
// the kernel's adaptive mutexes spin. Each side of a round trip has a direct sign of it:
// - a caller whose post found the loop thread draining or lingering (the queue's consumer active,
//   so the post needed no wake-up) knows that thread is on a CPU and will reply within its
//   callout: it spins, up to LOADED_SPIN_MAX_NANOSECONDS, unless that thread last replied from
//   the caller's own CPU. A post that had to wake the loop sleeps at once, as before.
// - a loop thread that has just answered a caller on another CPU lingers, up to
//   LOADED_LINGER_MAX_NANOSECONDS: the futex wake puts the caller back on its CPU within
//   microseconds (a woken sleeper preempts a CPU-bound neighbour), and its next post then finds
//   the loop awake, so neither sleeps again while the calls keep coming.
// Both keep the same-CPU rule and learn from their wins and losses as at rest. Measured with two
// CPU-bound threads beside a caller (2 vCPUs): round trips whose two threads ran on different
// CPUs took 1.1-2.7 µs at the median, against 25 µs when both slept (Benchmarks/README.md).
#define LOADED_SPIN_MAX_NANOSECONDS 10000
#define LOADED_LINGER_MAX_NANOSECONDS 20000

static int64_t replySpinBudget(const void *replier, int64_t now, bool replierAwake) {
    if (replierSharesCPU(replier)) return 0;
    if (spareCPUNow(now)) return learntBudget(&replies, SPIN_MAX_NANOSECONDS);
    return replierAwake ? learntBudget(&replies, LOADED_SPIN_MAX_NANOSECONDS) : 0;
}

void CLongThreadsShims_noteReplier(const void *replier, int cpu) {
    lastReplier = replier;
    lastReplierCPU = cpu;
}

int CLongThreadsShims_notedReplierCPU(const void *replier) {
    return replier != NULL && replier == lastReplier ? lastReplierCPU : -1;
}

int64_t CLongThreadsShims_replySpinBudget(const void *replier, bool replierAwake) {
    return replySpinBudget(replier, nowNanoseconds(), replierAwake);
}

void CLongThreadsShims_resetSpinHistories(void) {
    replies = (SpinHistory){ SPIN_MIN_NANOSECONDS, WIN_SCALE, 0 };
    lingers = (SpinHistory){ SPIN_MIN_NANOSECONDS, WIN_SCALE, 0 };
    joins = (SpinHistory){ JOIN_SPIN_MIN_NANOSECONDS, WIN_SCALE, 0 };
    parks = (SpinHistory){ SPIN_MIN_NANOSECONDS, WIN_SCALE, 0 };
}

int CLongThreadsShims_currentCPU(void) {
    return currentCPU();
}

void CLongThreadsShims_eventWaitForReply(CLongThreadsShims_Event *event, const void *replier, bool replierAwake) {
    if (!eventIsSet(event)) {
        int64_t start = nowNanoseconds();
        int64_t spinFor = replySpinBudget(replier, start, replierAwake);
        if (spinFor <= 0 || !spinUntil(&replies, start, spinFor, 1, eventIsSet, event)) sleepUntilSet(event, -1);
    }
    lastReplier = event->replier;
    lastReplierCPU = event->replierCPU;
}

// MARK: A thread's end
//
// `stop` waits for the thread to end: after the stop reaches the loop, tens of microseconds of
// its own work (CF's teardown, the thread's exit), which is about what a sleeping joiner's
// wake-up costs on a VM. So the joiner spins first, under the reply spin's rules (a spare CPU,
// three times recent wins, probes only while spins keep losing), with a longer budget and a
// history of its own. `pthread_tryjoin_np` only reads the tid the kernel clears at the thread's
// exit: no system call until it has ended.
#define JOIN_SPIN_MAX_NANOSECONDS 100000


typedef struct {
    pthread_t thread;
    int result;
} JoinAttempt;

static bool threadJoined(void *attempt) {
    JoinAttempt *join = attempt;
    join->result = pthread_tryjoin_np(join->thread, NULL);
    return join->result != EBUSY;
}

static int64_t joinSpinBudget(const void *replier, int64_t now) {
    // An ending thread on the joiner's CPU needs that CPU to end (see "Same CPU").
    return replierSharesCPU(replier) ? 0 : spinBudget(&joins, now, JOIN_SPIN_MAX_NANOSECONDS);
}

int64_t CLongThreadsShims_joinSpinBudget(const void *replier) {
    return joinSpinBudget(replier, nowNanoseconds());
}

int CLongThreadsShims_joinThread(pthread_t thread, const void *replier) {
    int64_t start = nowNanoseconds();
    int64_t spinFor = joinSpinBudget(replier, start);
    if (spinFor > 0) {
        if (spinFor < JOIN_SPIN_MIN_NANOSECONDS) spinFor = JOIN_SPIN_MIN_NANOSECONDS;
        JoinAttempt attempt = { thread, EBUSY };
        if (spinUntil(&joins, start, spinFor, 8, threadJoined, &attempt)) return attempt.result;
    }
    return pthread_join(thread, NULL);
}

// MARK: Linger
//
// The other half of a fast round trip. A loop thread that has just replied to a blocked caller
// will, often, get that caller's next request within microseconds: the caller's spin won, and it
// posts again at once. Asleep in epoll by then, the loop thread costs the caller a wake-up (a
// system call to signal it, tens of microseconds for an idle CPU to come back on a VM), and the
// caller's spin then loses too. So the loop thread lingers: it looks for work a little while
// before it goes back to sleep, under the same rules as the caller's spin (a spare CPU for both
// threads, or under load a caller on another CPU (see "Under load"), a budget of three times the
// caller's recent return times, and every PROBE_INTERVAL-th only while they keep losing). It lingers only after a reply: a queue fed asynchronously gains
// nothing from it. A linger that ends without work is judged when the next post comes (it is
// stamped): a caller back within LINGER_MAX_NANOSECONDS only woke up slowly (a caller that slept
// on its futex takes tens of microseconds to come back on a VM), so the next lingers wait that
// long, and then the caller's reply comes at once, its spin wins, and both stay awake; a later
// post counts as a loss.

static __thread int64_t lingerOverride;

int64_t CLongThreadsShims_lingerBudget(void) {
    if (lingerOverride != 0) return lingerOverride > 0 ? lingerOverride : 0;
    // The caller just answered ran on this CPU: lingering would keep it off (see "Same CPU").
    if (onCPU(lastWaiterCPU)) return 0;
    // Under load too: the caller is on another CPU, and a woken caller gets it back at once.
    bool spare = spareCPUNow(nowNanoseconds());
    return learntBudget(&lingers, spare ? LINGER_MAX_NANOSECONDS : LOADED_LINGER_MAX_NANOSECONDS);
}

void CLongThreadsShims_setLingerOverride(int64_t nanoseconds) {
    lingerOverride = nanoseconds;
}

void CLongThreadsShims_lingerWon(int64_t waitedNanoseconds) {
    recordSpin(&lingers, true, waitedNanoseconds);
}

void CLongThreadsShims_lingerRecordLate(int64_t lateNanoseconds) {
    if (lateNanoseconds > LINGER_MAX_NANOSECONDS) {
        recordSpin(&lingers, false, 0);
        return;
    }
    // Came back within what a linger may last: not a loss, a budget too short. Learn it fast.
    lingers.average += (lateNanoseconds - lingers.average) / 2;
}

// MARK: Park
//
// A loop thread that has just answered a caller on its own CPU cannot linger: that caller needs
// the CPU to post again (see "Same CPU"). When the caller did not take the CPU at the reply's
// wake (the usual reason: a CPU-bound neighbour shares it), the loop found no work and slept in
// CF, and each round trip then cost an eventfd write, and for the loop's wake-up a ppoll, an
// epoll_wait, a read and a pass of CF's: about seven system calls per round trip (7.0 µs against
// Dispatch's 4.7 with a hog on the pair's CPU). So the loop sleeps on a futex of its own, the park
// bell, instead: the caller's next post rings it (one futex wake), and the loop runs it in the same
// callout, with no pass of CF's, as a Dispatch worker would.
//
// The park's length. It ends at a post, a stop, the thread's next timer deadline, or after
// PARK_MAX_NANOSECONDS. Not sooner: a timed futex wait whose expiry comes before the CPU's next
// tick reprograms the timer hardware, on arming and again on the early wake (on this VM each is
// a hypervisor exit: a 10 µs park made 40-60% of pinned round trips take 11 µs instead of 4.7).
// One tick at HZ=250 (4 ms) is never the earliest expiry while the CPU is busy. Sources and timers
// of CF's own (not the thread's LongThreadTimers) wait meanwhile, as during a linger; a thread
// with descriptor sources or observers does not park (`ThreadCore.park`). Parks that keep ending
// without work stop but for every PROBE_INTERVAL-th, as spins do.
#define PARK_MAX_NANOSECONDS 4000000

static __thread int64_t parkOverride;

int64_t CLongThreadsShims_parkBudget(void) {
    if (parkOverride != 0) return parkOverride > 0 ? parkOverride : 0;
    if (!onCPU(lastWaiterCPU)) return 0;
    if (parks.wins < WIN_SCALE / 4 && ++parks.sinceProbe % PROBE_INTERVAL != 0) return 0;
    return PARK_MAX_NANOSECONDS;
}

void CLongThreadsShims_setParkOverride(int64_t nanoseconds) {
    parkOverride = nanoseconds;
}

void CLongThreadsShims_parkRecord(bool won, int64_t waitedNanoseconds) {
    recordSpin(&parks, won, waitedNanoseconds);
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
