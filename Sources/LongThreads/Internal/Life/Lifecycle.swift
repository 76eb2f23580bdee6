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
///
/// It also keeps who waits on the life: stoppers still releasing what they took (the loop may not
/// announce its end before they are done), tasks awaiting the end, callers waiting for another's
/// join. Its methods return the events to signal; the caller signals them after the lock.
/// Guarded by the thread's lock (`ThreadCore.SharedState.lifecycle`).
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
    /// Stoppers that changed the state and are still releasing what they took (discarded work,
    /// cancelled timers): the loop announces its end only once none is left.
    private var stopsInFlight = 0
    /// Made by the loop thread when it waits for `stopsInFlight` to reach 0.
    private var stopsReleased: OneShotEvent?
    /// Tasks awaiting the thread's end, resumed when it has left its loop (`exited`).
    private var exitWaiters: [CheckedContinuation<Void, Never>] = []
    /// Made by the first caller that waits for another's `pthread_join`, signalled when it
    /// returned (most lives have one joiner: no event to allocate).
    private var joined: OneShotEvent?

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

    /// A stop with `pending` was asked for. Unless the action is `.none`, the stopper is in flight
    /// until it calls `stopReleased()`.
    mutating func stopRequested(_ pending: LongThread.PendingWork) -> StopAction {
        let action: StopAction
        switch (state, pending) {
        case (.starting, _), (.running, _):
            state = .stopping(pending)
            action = pending == .discard ? .discard : .drain
        case (.stopping(.drain), .discard):
            state = .stopping(.discard)
            action = .discard
        case (.stopping, _), (.exited, _):
            action = .none
        }
        if action != .none { stopsInFlight += 1 }
        return action
    }

    /// A stopper released what it took. Returns the event to signal when it was the last one and
    /// the loop waits for it.
    mutating func stopReleased() -> OneShotEvent? {
        stopsInFlight -= 1
        return stopsInFlight == 0 ? stopsReleased : nil
    }

    /// Loop thread, before it announces its end: the event to wait on until every stopper has
    /// released what it took, or nil when none is in flight.
    mutating func waitForStopsReleased() -> OneShotEvent? {
        guard stopsInFlight > 0 else { return nil }
        let event = OneShotEvent()
        stopsReleased = event
        return event
    }

    /// A task awaits the end: false when the loop has exited already (the caller resumes it),
    /// else it is kept until `takeExitWaiters()`.
    mutating func awaitExit(_ continuation: CheckedContinuation<Void, Never>) -> Bool {
        if state == .exited { return false }
        exitWaiters.append(continuation)
        return true
    }

    /// Once `exited`: the tasks to resume (none can be added any more).
    mutating func takeExitWaiters() -> [CheckedContinuation<Void, Never>] {
        defer { exitWaiters = [] }
        return exitWaiters
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

    /// After `claimJoin()` returned `.waitForJoiner`: the event the joiner signals.
    mutating func joinedEvent() -> OneShotEvent {
        if let joined { return joined }
        let event = OneShotEvent()
        joined = event
        return event
    }

    /// The joiner returned. Returns the event to signal when others wait for it.
    @discardableResult
    mutating func joinFinished() -> OneShotEvent? {
        join = .joined
        return joined
    }

    /// The last handle died on the thread itself: nobody is left to join, so the thread detaches.
    /// Returns whether it must call `pthread_detach`.
    mutating func detachRequested() -> Bool {
        guard case .joinable = join else { return false }
        join = .detached
        return true
    }
}
