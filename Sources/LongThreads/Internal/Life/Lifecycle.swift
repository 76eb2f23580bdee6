import Glibc

/// The life of a thread as a value: what a stop does depends on where it finds the thread.
///
/// ```
/// starting ──loopStarted──▶ running ──stopRequested──▶ stopping(drain | discard) ──loopExited──▶ exited
///     └──────────────startFailed───────────────────────────────────────────────────────────────▶ exited
/// ```
/// Work is accepted only while `running`; a stop is sticky (it can come at any time, even before the
/// loop first ran, and is never lost) and idempotent, and a `.discard` request may cut a drain short.
/// Separately, the pthread is joined exactly once, or detached when the last handle dies on the thread.
struct Lifecycle {
    enum State: Equatable {
        /// `init` is creating the thread; nobody can post yet.
        case starting
        /// The loop runs and accepts work.
        case running
        /// A stop has begun: new work is refused; accepted work drains or is discarded.
        case stopping(LongThread.PendingWork)
        /// The loop has exited and released its work; the pthread is ending or has ended.
        case exited
    }

    enum Join: Equatable {
        /// No pthread exists (yet, or creation failed).
        case noThread
        case joinable(pthread_t)
        /// One caller is inside `pthread_join`; others wait for it.
        case joining
        case joined
        /// The thread detached itself; nobody may join it.
        case detached
        /// The caller's own thread runs the loop (`LongThread.runCurrentThread`): nobody joins it;
        /// its end is `exited`, signalled once it is given back.
        case adopted
    }

    /// What a stop request has to do, decided under the lock, done after it.
    enum StopAction: Equatable {
        /// Already stopping the same way or beyond: nothing to do.
        case none
        /// Wake the loop so that it drains and exits.
        case drain
        /// Take every queued item to discard it, and wake the loop.
        case discard
    }

    enum JoinAction: Equatable {
        case join(pthread_t)
        case waitForJoiner
        case done
    }

    private(set) var state: State = .starting
    private(set) var join: Join = .noThread
    /// The loop's last look found no job queued (`ThreadCore.runRemainingJobs`): from then on a
    /// job is refused too.
    private var jobsEnded = false

    var acceptsWork: Bool { state == .running }

    /// Swift concurrency jobs are accepted while the loop runs *and while it stops*, until its
    /// last look found none queued: a job that reaches a pinned actor while the thread drains runs
    /// on the thread (nobody could be told of a refusal).
    var acceptsJobs: Bool {
        switch state {
        case .running, .stopping: !jobsEnded
        case .starting, .exited: false
        }
    }

    var isStopping: Bool {
        if case .stopping = state { return true }
        return false
    }

    var discards: Bool { state == .stopping(.discard) }

    /// Whether a pthread was created (it may have ended since).
    var hasThread: Bool { join != .noThread }

    mutating func threadCreated(_ thread: pthread_t) {
        join = .joinable(thread)
    }

    mutating func threadAdopted() {
        join = .adopted
    }

    mutating func loopStarted() {
        // A stop requested during start-up stays: it is sticky.
        if state == .starting { state = .running }
    }

    mutating func startFailed() {
        state = .exited
    }

    mutating func stopRequested(_ pending: LongThread.PendingWork) -> StopAction {
        switch (state, pending) {
        case (.starting, _), (.running, _):
            state = .stopping(pending)
            return pending == .discard ? .discard : .drain
        case (.stopping(.drain), .discard):
            state = .stopping(.discard)
            return .discard
        case (.stopping, _), (.exited, _):
            return .none
        }
    }

    mutating func loopExited() {
        state = .exited
    }

    /// The loop's last look found no job queued: jobs are refused from now on.
    mutating func lastJobRan() {
        jobsEnded = true
    }

    mutating func claimJoin() -> JoinAction {
        switch join {
        case .joinable(let thread):
            join = .joining
            return .join(thread)
        case .joining:
            return .waitForJoiner
        case .joined, .detached, .noThread, .adopted:
            return .done
        }
    }

    mutating func joinFinished() {
        join = .joined
    }

    /// The last handle died on the thread itself: nobody is left to join, so the thread detaches.
    /// Returns whether it must call `pthread_detach`.
    mutating func detachRequested() -> Bool {
        guard case .joinable = join else { return false }
        join = .detached
        return true
    }
}
