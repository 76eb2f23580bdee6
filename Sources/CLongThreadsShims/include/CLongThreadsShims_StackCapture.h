// Capturing a LongThread's stack from another thread (StallMonitor): a real-time signal sent to
// that one thread, whose handler unwinds into memory prepared beforehand.
#ifndef CLONGTHREADSSHIMS_STACKCAPTURE_H
#define CLONGTHREADSSHIMS_STACKCAPTURE_H

#include <stdint.h>
#include <stddef.h>
#include <stdbool.h>

/// The signal used, SIGRTMIN + 6 (a real-time signal: no system default use, queued, never merged).
int CLongThreadsShims_stackCaptureSignal(void);

/// Installs the handler for the signal (SA_SIGINFO | SA_RESTART, every signal blocked while it
/// runs) and loads the unwinder, once per process. Returns 0, or EBUSY when something else already
/// handles the signal (it is then left alone), or errno of sigaction.
int CLongThreadsShims_stackCaptureInstall(void);

/// Unblocks the signal in the calling thread (a LongThread's loop thread, at its start: threads
/// inherit their creator's mask, and a process may start with every signal blocked).
void CLongThreadsShims_stackCaptureUnblockHere(void);

/// Signals thread `tid` of this process and waits, at most `timeoutNanoseconds`, for its handler
/// to unwind its stack. Writes up to `capacity` return addresses to `frames`, the interrupted
/// program counter first. Returns the count, or -ETIMEDOUT (the thread did not handle the signal
/// in time: it blocks it, or it never runs), -EBUSY (its handler started but did not finish in
/// twice that time), or -errno of tgkill. One capture at a time: the
/// caller serialises them.
int CLongThreadsShims_stackCapture(int32_t tid, int64_t timeoutNanoseconds, uintptr_t *frames, int capacity);

/// Sends the signal to thread `tid` of this process outside any capture (for tests: a stray
/// instance must be ignored). Returns 0 or errno.
int CLongThreadsShims_stackCaptureSignalThread(int32_t tid);

/// Whether a thread asleep in system call `number` with these six arguments (from
/// `/proc/self/task/<tid>/syscall`) may take the capture signal unseen: the kernel restarts the
/// call after a handler installed with SA_RESTART as if nothing happened, and a blocked call of
/// this kind has transferred nothing yet (see signal(7)). True for futex waits, `read`, `readv`,
/// `recvfrom` and `recvmsg` without MSG_WAITALL, `accept`, `accept4`, `wait4`, `waitid`, `flock`
/// and `fcntl(F_SETLKW)`; false for a socket with a receive timeout (SO_RCVTIMEO: the kernel then
/// returns EINTR) and for every other call (`write` may have moved bytes; `poll`, `select`,
/// `epoll_wait`, the sleeps are never restarted).
bool CLongThreadsShims_stackCaptureRestartsUnseen(long number, const uint64_t arguments[6]);

#endif
