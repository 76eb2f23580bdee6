import Glibc
import LongThreads

/// Weex gives its bridge and component threads the main thread's priority:
///
/// ```objc
/// [WXBridgeThread setQualityOfService:[[NSThread mainThread] qualityOfService]];
/// ```
///
/// so that the JavaScript and layout a screen waits for are never scheduled below the UI that
/// waits for them. Linux has no quality of service; the equivalent is the scheduling policy and,
/// for `SCHED_OTHER`, the nice value. Both are per thread on Linux, and the main thread's thread
/// id equals the process id, so `getpriority(PRIO_PROCESS, getpid())` reads the main thread's own
/// nice value, from any thread.
///
/// Why not `.inherited`? A new pthread inherits the scheduling of the thread that creates it, and
/// these singletons are created lazily by whichever thread touches them first, which may be a
/// low-priority background thread. Reading the main thread's value makes the result independent
/// of who came first, which is what Weex's code does.
public enum WXThreadPriority {
    /// The main thread's scheduling, as a LongThread policy.
    ///
    /// On a normal Linux process this is `SCHED_OTHER` with the process's nice value (0, or what
    /// `nice -n` started it with).
    public static func mainThreadPolicy() -> LongThread.SchedulingPolicy {
        let mainThread = getpid() // on Linux the main thread's tid is the pid
        switch sched_getscheduler(mainThread) {
        case schedBatch: return .batch
        case schedIdle: return .idle
        case SCHED_FIFO, SCHED_RR:
            var parameters = sched_param()
            sched_getparam(mainThread, &parameters)
            let priority = parameters.sched_priority
            return sched_getscheduler(mainThread) == SCHED_FIFO ? .fifo(priority: priority) : .roundRobin(priority: priority)
        default:
            return .other(nice: niceValue(ofThread: mainThread))
        }
    }

    // <sched.h> defines these only under _GNU_SOURCE, which Glibc's Swift module does not set.
    private static let schedBatch: Int32 = 3
    private static let schedIdle: Int32 = 5

    /// The nice value of the calling thread (Linux's `PRIO_PROCESS` with id 0 means the caller's
    /// thread, not the whole process).
    public static func currentThreadNice() -> Int32 {
        niceValue(ofThread: 0)
    }

    /// `getpriority` returns -1 both for nice -1 and for an error, so errno tells them apart.
    private static func niceValue(ofThread tid: pid_t) -> Int32 {
        errno = 0
        let value = getpriority(__priority_which_t(PRIO_PROCESS.rawValue), id_t(tid))
        return errno == 0 ? value : 0
    }

    /// Starts one of Weex's singleton threads with the main thread's priority.
    ///
    /// Raising a thread above its creator's priority (a lower nice value) needs `CAP_SYS_NICE` or
    /// an `RLIMIT_NICE`: when a low-priority thread happens to create the singleton, the kernel may
    /// refuse. Then the thread starts with inherited scheduling rather than not at all, as
    /// `-[NSThread setThreadPriority:]` also fails quietly. If no thread can be created at all,
    /// Weex has no way to run and neither has this example: that one failure is fatal.
    static func startSingleton(named name: String) -> LongThread {
        do {
            do {
                return try LongThread(name: name, options: .init(schedulingPolicy: mainThreadPolicy()))
            } catch .cannotStart(errno: EPERM), .cannotStart(errno: EACCES) {
                return try LongThread(name: name)
            }
        } catch {
            preconditionFailure("cannot start \(name): \(error)")
        }
    }
}
