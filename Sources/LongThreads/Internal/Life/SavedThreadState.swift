import CLongThreadsShims
import Glibc

/// What a LongThread changes on the thread it runs on, saved by `LongThread.runCurrentThread`
/// before the thread becomes a LongThread and put back after: a spawned thread simply ends with
/// them, an adopted one goes on. The kernel name, the signal mask (a stall monitor unblocks its
/// capture signal), and, when `Options` asks for any, the scheduling (policy, priority, nice,
/// slice). Calling thread only.
struct SavedThreadState {
    private let name: [CChar]
    private let signalMask: sigset_t
    private let scheduling: Scheduling?

    private struct Scheduling {
        var policy: Int32
        var parameters: sched_param
        var nice: Int32
        var slice: UInt64
    }

    /// Saves what running as a LongThread with `options` may change on the calling thread.
    init(changedBy options: LongThread.Options) {
        var name = [CChar](repeating: 0, count: 16)
        if CLongThreadsShims_currentThreadName(&name, name.count) != 0 { name = [0] }
        self.name = name
        var mask = sigset_t()
        pthread_sigmask(SIG_BLOCK, nil, &mask)
        signalMask = mask
        let changesScheduling = options.schedulingPolicy != .inherited || options.schedulerSlice != nil
        scheduling = changesScheduling ? Self.currentScheduling() : nil
    }

    /// Puts back what was saved, and clears the thread's reply key. Best effort for the
    /// scheduling: an unprivileged thread may not raise its priority again (a lower nice value
    /// needs `RLIMIT_NICE` or `CAP_SYS_NICE`), and then keeps the one its options gave it.
    func restore() {
        WaitLearning.current.pointee.replierKey = nil
        if name.first != 0 { _ = name.withUnsafeBufferPointer { CLongThreadsShims_setCurrentThreadName($0.baseAddress!) } }
        var mask = signalMask
        pthread_sigmask(SIG_SETMASK, &mask, nil)
        guard var scheduling else { return }
        pthread_setschedparam(pthread_self(), scheduling.policy, &scheduling.parameters)
        // SCHED_OTHER and SCHED_BATCH (3, which Glibc's Swift module hides) have a nice value.
        if scheduling.policy == SCHED_OTHER || scheduling.policy == 3 {
            setpriority(__priority_which_t(PRIO_PROCESS.rawValue), id_t(CLongThreadsShims_gettid()), scheduling.nice)
        }
        if scheduling.slice != 0, CLongThreadsShims_currentThreadSlice() != scheduling.slice {
            _ = CLongThreadsShims_setCurrentThreadSlice(scheduling.slice)
        }
    }

    private static func currentScheduling() -> Scheduling {
        var policy: Int32 = 0
        var parameters = sched_param()
        pthread_getschedparam(pthread_self(), &policy, &parameters)
        let tid = id_t(CLongThreadsShims_gettid())
        errno = 0
        let nice = getpriority(__priority_which_t(PRIO_PROCESS.rawValue), tid)
        return Scheduling(policy: policy, parameters: parameters, nice: nice, slice: CLongThreadsShims_currentThreadSlice())
    }
}
