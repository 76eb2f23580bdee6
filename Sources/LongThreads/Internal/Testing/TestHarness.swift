import CLongThreadsShims
import Foundation

/// What LongThreadsTestKit attaches to one thread (`LongThread.Options.harness`): its virtual
/// clock, the gate that pauses its queue between items, and the faults a test asks for.
///
/// The gate and the faults apply to the user's posts only, as each post's `PostKind` says: the
/// library's own posts (`ThreadCore.enqueueOwn`) and Swift concurrency jobs are never refused, and
/// the gate holds queued work and jobs, never urgent or own work.
///
/// It is the thread's test seam (`TestSeam`): the core tells it what it waits for (a drain pass
/// ended, a stop began, the loop exited...), so its waits sleep until then; it reads the core only
/// through `ThreadCore+TestSeam.swift`. A thread without a harness never reads any of this: its
/// drain tests one hint bit per item (`Hints.harnessed`), in a register already loaded, and its
/// posts test the same word they test for timing.
/// - Threading: every member is callable from any thread; the stepping calls not from the thread
///   itself (they wait for it).
@_spi(TestKit)
public final class TestHarness: @unchecked Sendable {
    /// A thread did not settle (reach its gate, or go idle) within `settleTimeout` of real time.
    public struct SettleError: Error, CustomStringConvertible {
        /// The thread's name.
        public let thread: String?
        /// What the harness waited for.
        public let waitingFor: String
        public var description: String {
            "LongThreadsTestKit: thread \(thread ?? "nil") did not settle while waiting for \(waitingFor)"
        }
    }

    private struct State {
        var paused: Bool
        var permits = 0
        /// The loop thread waits at the gate; `batchLabels` are the labels of the batch's entries
        /// from the one it waits before.
        var atGate = false
        var batchLabels: [String?] = []
        /// Items that passed the gate.
        var passed: UInt64 = 0
        var lastPassedLabel: String?
        /// Timer services asked for by `advance`, and the last one a service began after.
        var timersRequested: UInt64 = 0
        var timersServiced: UInt64 = 0
        var refusal: LongThreadError?
        /// How often a stepping call's wait woke (`wakeUpsForTesting`).
        var wakeUps: UInt64 = 0
        var stopAfter: (label: String, pending: LongThread.PendingWork)?
    }

    /// The clock the thread's time follows.
    public let clock: VirtualClock
    /// How long (real time) a stepping call waits for the thread before it throws `SettleError`.
    public let settleTimeout: Duration
    /// What `LongThread.init` throws instead of starting the thread.
    public let startFailure: LongThreadError?
    /// Guards `state`; broadcast on every change a wait looks at (`waitUntil`).
    private let condition = NSCondition()
    private var state: State
    /// Written once by `attached(to:)`, before the thread runs.
    private weak var core: ThreadCore?
    private var threadName: String?

    public init(clock: VirtualClock, paused: Bool, settleTimeout: Duration = .seconds(10), startFailure: LongThreadError? = nil) {
        self.clock = clock
        self.settleTimeout = settleTimeout
        self.startFailure = startFailure
        self.state = State(paused: paused)
    }

    /// How often the stepping calls' waits woke, for tests of the harness itself.
    var wakeUpsForTesting: UInt64 { locked { $0.wakeUps } }

    private func locked<T>(_ body: (inout State) -> T) -> T {
        condition.lock()
        defer { condition.unlock() }
        return body(&state)
    }

    // MARK: - Faults

    /// The user's next post to the thread (`PostKind.isRefusable`) throws `error` instead of
    /// queuing its work.
    public func refuseNextPost(with error: LongThreadError) {
        locked { $0.refusal = error }
    }

    /// Once the item labelled `label` has run, a stop with `pending` begins before the thread's
    /// next item.
    public func stop(afterItemLabeled label: String, pending: LongThread.PendingWork) {
        locked { $0.stopAfter = (label, pending) }
    }

    // MARK: - Stepping (the test's thread)

    /// Whether the thread's queue waits for the test (`runOne`, `runUntilIdle`) between items.
    public var isPaused: Bool {
        get { locked { $0.paused } }
        set {
            locked { $0.paused = newValue }
            condition.broadcast()
        }
    }

    /// The earliest deadline of the thread's timers and deadline work, if any.
    public var nextDeadline: ContinuousClock.Instant? { nextTimerDeadline.map(clock.instant(at:)) }

    /// The earliest deadline of the thread's timers not yet due, on the clock.
    var nextTimerDeadline: UInt64? { core?.nextTimerDeadlineForTest }

    /// Has the thread run its timers due at the clock's now, and waits until it did.
    func serviceTimers() throws(SettleError) {
        guard let core else { return }
        let generation = locked { state in
            state.timersRequested += 1
            return state.timersRequested
        }
        condition.broadcast() // a gate waiting services them itself
        guard core.serviceTimersForTest() else { return }
        try waitUntil("its due timers to run") { state in
            state.timersServiced >= generation || core.hasExitedForTest
        }
    }

    /// Runs one item of a paused thread's queue and returns once it ran (and the thread waits at
    /// its gate again, or is idle); false when nothing waits.
    public func runOne() throws(SettleError) -> Bool {
        try settle()
        let target = locked { state -> UInt64? in
            guard state.atGate else { return nil }
            state.permits += 1
            return state.passed + 1
        }
        guard let target else { return false }
        condition.broadcast()
        try waitUntil("one item to run") { $0.passed >= target }
        try settle()
        return true
    }

    /// Runs the thread's queue until it is empty and the thread idle, work posted meanwhile
    /// included (by its own items, say), then pauses it again if it was paused.
    public func runUntilIdle() throws(SettleError) {
        guard let core else { return }
        let wasPaused = locked { state in
            defer { state.paused = false }
            return state.paused
        }
        condition.broadcast()
        defer { isPaused = wasPaused }
        try waitUntil("its queue to empty") { state in
            !state.atGate && core.isIdleForTest
        }
    }

    /// `VirtualClock.advance`, before it moves the clock and after each deadline: a running thread
    /// runs until idle; a paused one keeps its queue for the test, and settles.
    func settleForClock() throws(SettleError) {
        if isPaused { try settle() } else { try runUntilIdle() }
    }

    /// The labels of the work waiting in the thread's queue, in the order it runs (nil: unlabelled).
    /// Settles first (see `settle`). Work for a deadline waits on the clock, not here.
    public func pendingLabels() throws(SettleError) -> [String?] {
        try settle()
        guard let core else { return [] }
        return locked { state in
            state.batchLabels + core.queuedLabelsForTest
        }
    }

    /// Waits until the thread waits at its gate or is idle, so that what is pending can be read.
    private func settle() throws(SettleError) {
        guard let core else { return }
        // At its gate with work posted ahead of the waiting items, the loop is about to run it.
        try waitUntil("its loop to settle") { state in
            (state.atGate && !core.urgentWorkWaitsForTest) || core.isIdleForTest
        }
    }

    /// Waits until `test` holds, or throws once `settleTimeout` passed. Never polls: every change
    /// `test` reads broadcasts `condition` after it is made. The harness's own (a gate reached or
    /// left, a permit, a pause, timers serviced) under its lock; the thread's (a drain pass ended,
    /// the drain parked or a nested run began, work posted ahead of the waiting items, a stop, the
    /// loop's exit) through the seam's events, which take the lock to broadcast: this wait holds
    /// it from its check to its sleep, so none comes in between.
    private func waitUntil(_ what: String, _ test: (State) -> Bool) throws(SettleError) {
        let deadline = Date(timeIntervalSinceNow: TimeInterval(settleTimeout.clampedNanoseconds) / 1e9)
        condition.lock()
        defer { condition.unlock() }
        while !test(state) {
            guard condition.wait(until: deadline) else {
                if test(state) { return }
                throw SettleError(thread: threadName, waitingFor: what)
            }
            state.wakeUps += 1
        }
    }
}

extension TestHarness: TestSeam {
    /// `ThreadCore.init`: the thread this harness serves.
    func attached(to core: ThreadCore) {
        precondition(self.core == nil, "LongThreadsTestKit: a TestHarness serves one thread")
        self.core = core
        threadName = core.name
        clock.register(self)
    }

    func threadStarts() throws(LongThreadError) {
        if let startFailure { throw startFailure }
    }

    func refusal(forPostOf kind: PostKind) -> LongThreadError? {
        guard kind.isRefusable else { return nil }
        return locked { state in
            defer { state.refusal = nil }
            return state.refusal
        }
    }

    /// Before a permit, a paused gate runs the work posted ahead of the waiting items.
    func postedAhead() { threadChanged() }

    /// A paused gate opens for a stop; a discarding stop may have emptied the queue.
    func stopBegan() { threadChanged() }

    func drainPassEnded() { threadChanged() }

    func drainSuspended() { threadChanged() }

    func loopExited() { threadChanged() }

    /// A change made by the thread that a wait (`waitUntil`) or a gate waiting looks at.
    private func threadChanged() {
        // Under the lock: a wait between its check and its sleep holds it, and so hears this.
        condition.lock()
        condition.broadcast()
        condition.unlock()
    }

    /// Before an entry the test holds (`labels`: the batch's untaken entries from it on): waits
    /// while the thread is paused without a permit and nothing else is to be done; a stop opens
    /// the gate.
    func gate(_ core: ThreadCore, labels: @autoclosure () -> [String?]) -> TestGateAction {
        if let stop = locked({ state -> LongThread.PendingWork? in
            guard let stop = state.stopAfter, state.passed > 0, state.lastPassedLabel == stop.label else { return nil }
            state.stopAfter = nil
            return stop.pending
        }) {
            return .stop(stop)
        }
        let labels = labels()
        condition.lock()
        defer { condition.unlock() }
        state.atGate = true
        state.batchLabels = labels
        condition.broadcast()
        // Every check under the lock, up to the wait that releases it: each change looked at
        // broadcasts under or after the lock (a step, a pause, `advance`, and through the seam a
        // stop or work posted ahead of the waiting items), so none is missed. The core's lock is
        // taken inside this one, never the other way round.
        while true {
            // The loop leaves the gate for these (`atGate` false: the thread is not settled).
            if state.timersRequested > state.timersServiced { return leaveGate(for: .serviceTimers) }
            // Before a permit: work posted ahead of the item runs before it, as on a real thread.
            if core.urgentWorkWaitsForTest { return leaveGate(for: .runUrgentItems) }
            if !state.paused || state.permits > 0 || core.stopBegunForTest { break }
            condition.wait()
        }
        if state.permits > 0 { state.permits -= 1 }
        state.passed += 1
        state.lastPassedLabel = labels.first ?? nil
        return leaveGate(for: .pass)
    }

    /// Under the lock, the loop thread leaving its gate for `action`.
    private func leaveGate(for action: TestGateAction) -> TestGateAction {
        state.atGate = false
        state.batchLabels = []
        condition.broadcast()
        return action
    }

    func timersServiceBegins() -> UInt64 {
        locked { $0.timersRequested }
    }

    func timersServiceEnded(_ request: UInt64) {
        locked { state in
            if request > state.timersServiced { state.timersServiced = request }
        }
        condition.broadcast()
    }
}
