import CLongThreadsShims
import Foundation

/// What LongThreadsTestKit attaches to one thread (`LongThread.Options.harness`): its virtual
/// clock, the gate that pauses its queue between items, and the faults a test asks for.
///
/// The gate and the faults apply to the user's posts only, as each post's `PostKind` says: the
/// library's own posts (`ThreadCore.enqueueOwn`) and Swift concurrency jobs are never refused, and
/// the gate holds queued work and jobs, never urgent or own work.
///
/// A thread without a harness never reads any of this: its drain tests one hint bit per item
/// (`Hints.harnessed`), in a register already loaded, and its posts test the same word they test
/// for timing.
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
        var stopAfter: (label: String, pending: LongThread.PendingWork)?
    }

    /// The clock the thread's time follows.
    public let clock: VirtualClock
    /// How long (real time) a stepping call waits for the thread before it throws `SettleError`.
    public let settleTimeout: Duration
    /// What `LongThread.init` throws instead of starting the thread.
    public let startFailure: LongThreadError?
    private let condition = NSCondition()
    private var state: State
    private weak var core: ThreadCore?

    public init(clock: VirtualClock, paused: Bool, settleTimeout: Duration = .seconds(10), startFailure: LongThreadError? = nil) {
        self.clock = clock
        self.settleTimeout = settleTimeout
        self.startFailure = startFailure
        self.state = State(paused: paused)
    }

    /// `ThreadCore.init`: the thread this harness is attached to.
    func attach(_ core: ThreadCore) {
        precondition(self.core == nil, "LongThreadsTestKit: a TestHarness serves one thread")
        self.core = core
        clock.register(self)
    }

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

    /// Posting thread: the refusal asked for, if any, taken.
    func takeRefusal() -> LongThreadError? {
        locked { state in
            defer { state.refusal = nil }
            return state.refusal
        }
    }

    /// Once the item labelled `label` has run, a stop with `pending` begins before the thread's
    /// next item.
    public func stop(afterItemLabeled label: String, pending: LongThread.PendingWork) {
        locked { $0.stopAfter = (label, pending) }
    }

    // MARK: - The gate (loop thread)

    /// What the loop thread does at the gate before an entry the test holds (`PostKind.isHeld`).
    enum GateAction {
        /// Runs the entry.
        case pass
        /// Runs the timers `advance` asked for, then comes back.
        case serviceTimers
        /// Runs the work posted ahead of the waiting items meanwhile (the user's urgent work, the
        /// library's own posts: never held), then comes back.
        case runUrgentItems
        /// Begins the stop asked for after the previous item, then comes back.
        case stop(LongThread.PendingWork)
    }

    /// Loop thread, before the drain runs an entry the test holds (`labels`: the batch's untaken
    /// entries from it on): what to do. Waits while the thread is paused without a permit and
    /// nothing else is to be done; a stop opens the gate.
    func gate(_ core: ThreadCore, labels: @autoclosure () -> [String?]) -> GateAction {
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
        // broadcasts under or after the lock (a step, a pause, `advance`, and through
        // `threadChanged` a stop or work posted ahead of the waiting items), so none is missed.
        // The core's lock is taken inside this one, never the other way round.
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
    private func leaveGate(for action: GateAction) -> GateAction {
        state.atGate = false
        state.batchLabels = []
        condition.broadcast()
        return action
    }

    /// Any thread, after a stop began or work was posted ahead of the waiting items: a gate
    /// waiting looks again.
    func threadChanged() {
        // Under the lock: a gate between its checks and its wait holds it, and so hears this.
        condition.lock()
        condition.broadcast()
        condition.unlock()
    }

    /// Loop thread, as `engineServiceTimers` begins: the requests it answers.
    func timersServiceBegins() -> UInt64 {
        locked { $0.timersRequested }
    }

    /// Loop thread, as `engineServiceTimers` ends.
    func timersServiced(_ generation: UInt64) {
        locked { state in
            if generation > state.timersServiced { state.timersServiced = generation }
        }
        condition.broadcast()
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
    var nextTimerDeadline: UInt64? {
        core?.shared.withLock { $0.timerSchedule.earliestDeadline } ?? nil
    }

    /// Has the thread run its timers due at the clock's now, and waits until it did.
    func serviceTimers() throws(SettleError) {
        guard let core else { return }
        let generation = locked { state in
            state.timersRequested += 1
            return state.timersRequested
        }
        condition.broadcast() // a gate waiting services them itself
        // Signalled, then woken (out of a park too): a signal alone leaves a sleeping loop asleep.
        let running = core.withLockWaking { (state: inout ThreadCore.SharedState, wake: inout Wake) -> Bool in
            guard let engine = state.engine else { return false }
            engine.signalTimers()
            wake.forPass(&state)
            return true
        }
        guard running else { return }
        try waitUntil("its due timers to run") { state in
            state.timersServiced >= generation || core.shared.withLock { $0.engine == nil }
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
            !state.atGate && core.shared.withLock { Self.isIdle($0) }
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
            state.batchLabels + core.shared.withLock { shared in shared.queue.labelsForTest }
        }
    }

    /// Waits until the thread waits at its gate or is idle, so that what is pending can be read.
    private func settle() throws(SettleError) {
        guard let core else { return }
        // At its gate with work posted ahead of the waiting items, the loop is about to run it.
        try waitUntil("its loop to settle") { state in
            (state.atGate && !core.urgentWorkWaitsForTest) || core.shared.withLock { Self.isIdle($0) }
        }
    }

    /// Whether the loop has nothing queued and is not draining (or has exited).
    private static func isIdle(_ state: ThreadCore.SharedState) -> Bool {
        state.engine == nil || (state.queue.isEmpty && !state.queue.consumerActive)
    }

    /// Waits, polling every 200 µs, until `condition` holds; throws after `settleTimeout`.
    private func waitUntil(_ what: String, _ test: (State) -> Bool) throws(SettleError) {
        let deadline = ContinuousClock.now + settleTimeout
        condition.lock()
        defer { condition.unlock() }
        while !test(state) {
            if ContinuousClock.now >= deadline { throw SettleError(thread: core?.name, waitingFor: what) }
            _ = condition.wait(until: Date(timeIntervalSinceNow: 0.0002))
        }
    }
}

extension WorkQueue {
    /// The labels of the user's entries, in the order they run (urgent ones first).
    var labelsForTest: [String?] { (urgent.reversed() + entries).labelsForTest }
}

extension Sequence<QueueEntry> {
    /// The labels of the user's entries waiting among these: a test never sees the library's own.
    var labelsForTest: [String?] { filter { !$0.isTaken && !$0.kind.isOwn }.map(\.item.label) }
}

extension ThreadCore {
    /// Loop thread, a harnessed thread's drain, before it runs the batch entry at `index`: an entry
    /// the test holds (`PostKind.isHeld`) waits at the harness's gate, doing what the gate says
    /// meanwhile. Returns false when a discarding stop began meanwhile.
    @inline(never)
    func passGate(at index: Int, _ pass: inout DrainPass) -> Bool {
        guard let harness = options.harness, loop.batch.entries[index].kind.isHeld else { return true }
        while true {
            switch harness.gate(self, labels: loop.batch.entries[index...].labelsForTest) {
            case .pass: return !discardRequested
            case .serviceTimers:
                if let engine = shared.withLock({ $0.engine }) { engineServiceTimers(engine) }
            case .runUrgentItems: pass.ran += runUrgentItems()
            case .stop(let pending): requestStop(pending)
            }
        }
    }

    /// Any thread, after a change a paused thread's gate waits for and the harness does not make
    /// itself: a stop began, or work was posted ahead of the waiting items (`enqueue`).
    @inline(never)
    func noticeForTest() {
        options.harness?.threadChanged()
    }

    /// Any thread: whether work posted ahead of the waiting items waits (`Hints.urgent`).
    var urgentWorkWaitsForTest: Bool { hints.load(ordering: .relaxed) & Hints.urgent != 0 }

    /// Any thread: whether a stop has begun.
    var stopBegunForTest: Bool { shared.withLock { $0.lifecycle.isStopping } }
}
