// Stack capture for StallMonitor: see CLongThreadsShims_StackCapture.h.
//
// Protocol. The monitor (one capture at a time) fills `request` with the target's thread id,
// arms it, and sends the signal to that thread alone with tgkill. The handler acts only when the
// request is armed for the thread it runs on (a stray instance of the signal, say from kill(1),
// is ignored); it claims the request (ARMED -> RUNNING), unwinds with backtrace(3) into
// `request.frames`, marks it DONE and wakes the monitor. A monitor that times out takes the
// request back (ARMED -> IDLE) unless the handler already claimed it, so a late handler never
// writes into a request it does not own.
//
// Async-signal safety: the handler touches only `request` (static memory) and calls gettid,
// backtrace and futex. backtrace(3) loads libgcc's unwinder on its first call (not safe in a
// handler), so the install calls it once first; after that it reads the unwind tables through
// _dl_find_object (glibc 2.35 and later), which takes no lock. errno is saved and restored.
#define _GNU_SOURCE
#include "CLongThreadsShims_StackCapture.h"
#include "CLongThreadsShims.h"

#include <pthread.h>
#include <errno.h>
#include <fcntl.h>
#include <execinfo.h>
#include <linux/futex.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

enum { requestIdle = 0, requestArmed = 1, requestRunning = 2, requestDone = 3 };
enum { requestCapacity = 128 };

static struct {
    _Atomic uint32_t state;
    _Atomic int32_t tid;
    uintptr_t pc;
    int count;
    void *frames[requestCapacity];
} request;

static uintptr_t interruptedPC(void *context) {
    ucontext_t *uc = context;
#if defined(__x86_64__)
    return (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
#elif defined(__aarch64__)
    return (uintptr_t)uc->uc_mcontext.pc;
#else
    (void)uc;
    return 0;
#endif
}

static void CLongThreadsShims_stackCaptureHandler(int signo, siginfo_t *info, void *context) {
    (void)signo;
    (void)info;
    int saved = errno;
    uint32_t armed = requestArmed;
    if (atomic_load(&request.tid) == (int32_t)syscall(SYS_gettid)
        && atomic_compare_exchange_strong(&request.state, &armed, requestRunning)) {
        request.pc = interruptedPC(context);
        request.count = backtrace(request.frames, requestCapacity);
        atomic_store(&request.state, requestDone);
        syscall(SYS_futex, &request.state, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
    }
    errno = saved;
}

int CLongThreadsShims_stackCaptureSignal(void) {
    return SIGRTMIN + 6;
}

int CLongThreadsShims_stackCaptureInstall(void) {
    int signo = CLongThreadsShims_stackCaptureSignal();
    struct sigaction old;
    if (sigaction(signo, NULL, &old) != 0) return errno;
    if ((old.sa_flags & SA_SIGINFO) && old.sa_sigaction == CLongThreadsShims_stackCaptureHandler) return 0;
    if ((old.sa_flags & SA_SIGINFO) || old.sa_handler != SIG_DFL) return EBUSY;
    void *warmUp[4];
    (void)backtrace(warmUp, 4);
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_sigaction = CLongThreadsShims_stackCaptureHandler;
    action.sa_flags = SA_SIGINFO | SA_RESTART;
    sigfillset(&action.sa_mask);
    return sigaction(signo, &action, NULL) == 0 ? 0 : errno;
}

void CLongThreadsShims_stackCaptureUnblockHere(void) {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, CLongThreadsShims_stackCaptureSignal());
    pthread_sigmask(SIG_UNBLOCK, &set, NULL);
}

static uint64_t nowNanoseconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/// Sleeps while `request.state` is `seen`, until `deadline` (0: no limit).
static void waitWhile(uint32_t seen, uint64_t deadline) {
    struct timespec timeout;
    struct timespec *limit = NULL;
    if (deadline != 0) {
        uint64_t now = nowNanoseconds();
        uint64_t left = deadline > now ? deadline - now : 0;
        timeout.tv_sec = (time_t)(left / 1000000000u);
        timeout.tv_nsec = (long)(left % 1000000000u);
        limit = &timeout;
    }
    syscall(SYS_futex, &request.state, FUTEX_WAIT_PRIVATE, seen, limit, NULL, 0);
}

int CLongThreadsShims_stackCapture(int32_t tid, int64_t timeoutNanoseconds, uintptr_t *frames, int capacity) {
    request.count = 0;
    request.pc = 0;
    atomic_store(&request.tid, tid);
    atomic_store(&request.state, requestArmed);
    if (syscall(SYS_tgkill, getpid(), tid, CLongThreadsShims_stackCaptureSignal()) != 0) {
        int error = errno;
        atomic_store(&request.state, requestIdle);
        return -error;
    }
    uint64_t deadline = nowNanoseconds() + (uint64_t)(timeoutNanoseconds > 0 ? timeoutNanoseconds : 0);
    for (;;) {
        uint32_t state = atomic_load(&request.state);
        if (state == requestDone) break;
        if (nowNanoseconds() >= deadline) {
            uint32_t armed = requestArmed;
            if (atomic_compare_exchange_strong(&request.state, &armed, requestIdle)) {
                atomic_store(&request.tid, 0);
                return -ETIMEDOUT;
            }
            if (state == requestRunning) {
                // Claimed, but not finished in twice the time: a handler never blocks, so the
                // thread is stopped (a debugger) or starved. Give up; the handler ends on its own
                // and only ever writes into `request`, which the next capture re-arms.
                if (nowNanoseconds() >= deadline + (uint64_t)timeoutNanoseconds) return -EBUSY;
            }
        }
        uint64_t limit = state == requestArmed ? deadline : deadline + (uint64_t)timeoutNanoseconds;
        if (nowNanoseconds() < limit) waitWhile(state, limit);
    }
    // The interrupted program counter first, then what backtrace(3) found below the handler's
    // own frames and the signal trampoline (the first frame at or below the interrupted one).
    int count = 0;
    if (request.pc != 0 && count < capacity) frames[count++] = request.pc;
    int start = 0;
    for (int index = 0; index < request.count; index++) {
        if ((uintptr_t)request.frames[index] == request.pc) {
            start = index + 1;
            break;
        }
    }
    for (int index = start; index < request.count && count < capacity; index++) {
        frames[count++] = (uintptr_t)request.frames[index];
    }
    atomic_store(&request.tid, 0);
    atomic_store(&request.state, requestIdle);
    return count;
}

int CLongThreadsShims_stackCaptureSignalThread(int32_t tid) {
    return syscall(SYS_tgkill, getpid(), tid, CLongThreadsShims_stackCaptureSignal()) == 0 ? 0 : errno;
}

/// Whether `fd` is a socket with a receive timeout: its blocking reads and accepts return EINTR
/// after a handler, SA_RESTART or not. The descriptor is the stalled thread's, in this process.
static bool hasReceiveTimeout(uint64_t fd) {
    struct stat status;
    if (fd > INT32_MAX || fstat((int)fd, &status) != 0 || !S_ISSOCK(status.st_mode)) return false;
    struct timeval timeout = { 0, 0 };
    socklen_t size = sizeof timeout;
    if (getsockopt((int)fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, &size) != 0) return true; // unknown: assume so
    return timeout.tv_sec != 0 || timeout.tv_usec != 0;
}

bool CLongThreadsShims_stackCaptureRestartsUnseen(long number, const uint64_t arguments[6]) {
    if (CLongThreadsShims_isFutexSystemCall(number)) return true;
    switch (number) {
    case SYS_read:
    case SYS_readv:
    case SYS_accept:
    case SYS_accept4:
        return !hasReceiveTimeout(arguments[0]);
    case SYS_recvfrom:
        return (arguments[3] & MSG_WAITALL) == 0 && !hasReceiveTimeout(arguments[0]);
    case SYS_recvmsg:
        return (arguments[2] & MSG_WAITALL) == 0 && !hasReceiveTimeout(arguments[0]);
    case SYS_wait4:
    case SYS_waitid:
    case SYS_flock:
        return true;
    case SYS_fcntl:
        return arguments[1] == F_SETLKW || arguments[1] == F_OFD_SETLKW;
    default:
        return false;
    }
}
