import CLongThreadsShims
import Foundation

/// The time of threads made by LongThreadsTestKit: it stands still until a test advances it.
///
/// A thread whose options carry a `TestHarness` reads this clock wherever it would read the real
/// one to place work in time: `perform(after:)`, `perform(at:)`, `run(at:)`, repeating timers, and
/// the timeouts of `sync(timeout:)` and `perform(waitUntilDone:timeout:)`. Its timers arm no CF
/// timer; `advance(to:)` runs them instead, one deadline at a time, on their own thread.
///
/// Its instants are `ContinuousClock` instants: the clock starts at the real now and moves only by
/// `advance`, so a deadline computed from ``now`` means what it says.
/// - Threading: every member is callable from any thread but the clock's threads themselves
///   (`advance` waits for them).
@_spi(TestKit)
public final class VirtualClock: @unchecked Sendable {
    /// A caller's timeout waiting for virtual time (`sync(timeout:)`).
    private struct Alarm {
        let deadline: UInt64
        let id: UInt64
        let fire: @Sendable () -> Void
    }

    private struct State {
        var offset: UInt64 = 0
        var alarms: [Alarm] = []
        var nextAlarmID: UInt64 = 0
        var harnesses: [WeakHarness] = []
    }

    private struct WeakHarness {
        weak var harness: TestHarness?
    }

    private let originNanoseconds: UInt64
    private let originInstant: ContinuousClock.Instant
    private let state = Locked(State())
    /// Held by `advance` for its whole run: two advances at once would interleave deadlines.
    private let advancing = NSLock()

    /// A clock at the real now.
    public init() {
        originNanoseconds = CLongThreadsShims_monotonicNanoseconds()
        originInstant = .now
    }

    /// The clock's time as monotonic nanoseconds (the unit of `TimerSchedule`).
    var nanoseconds: UInt64 { originNanoseconds &+ state.withLock { $0.offset } }

    /// The clock's time.
    public var now: ContinuousClock.Instant { instant(at: nanoseconds) }

    /// How much the clock has been advanced since it was made.
    public var elapsed: Duration { .nanoseconds(Int64(clamping: state.withLock { $0.offset })) }

    func instant(at nanoseconds: UInt64) -> ContinuousClock.Instant {
        let offset = Int64(clamping: nanoseconds) &- Int64(clamping: originNanoseconds)
        return originInstant.advanced(by: .nanoseconds(offset))
    }

    /// The earliest deadline of work or a timeout waiting on this clock, if any.
    public var nextDeadline: ContinuousClock.Instant? { nextEvent().map { instant(at: $0.deadline) } }

    func register(_ harness: TestHarness) {
        state.withLock { state in
            state.harnesses.removeAll { $0.harness == nil }
            state.harnesses.append(WeakHarness(harness: harness))
        }
    }

    private var harnesses: [TestHarness] { state.withLock { $0.harnesses.compactMap(\.harness) } }

    // MARK: - Alarms

    /// Calls `fire` on the advancing thread once the clock reaches `delay` from now; returns the
    /// alarm's id, for `cancelAlarm`.
    func addAlarm(after delay: Duration, _ fire: @escaping @Sendable () -> Void) -> UInt64 {
        state.withLock { state in
            state.nextAlarmID += 1
            let deadline = originNanoseconds &+ state.offset &+ UInt64(delay.clampedNanoseconds)
            state.alarms.append(Alarm(deadline: deadline, id: state.nextAlarmID, fire: fire))
            return state.nextAlarmID
        }
    }

    func cancelAlarm(_ id: UInt64) {
        let removed = state.withLock { state in state.alarms.firstIndex { $0.id == id }.map { state.alarms.remove(at: $0) } }
        _ = removed // released outside the lock
    }

    /// Blocks until `done` is signalled or the clock passed `timeout` from now: a virtual
    /// `OneShotEvent.wait(timeout:)`. Returns false when the time passed first.
    func wait(for done: OneShotEvent, timeout: Duration) -> Bool {
        let expired = Locked(false)
        let id = addAlarm(after: timeout) {
            expired.withLock { $0 = true }
            done.signal()
        }
        done.wait()
        cancelAlarm(id)
        return !expired.withLock { $0 }
    }

    // MARK: - Advancing

    private enum Event {
        case alarm(Alarm)
        case timers(TestHarness)
    }

    /// The next thing due: at equal deadlines, a thread's timers before a waiting caller's timeout
    /// (work due at the instant runs; a caller still waiting then times out).
    private func nextEvent() -> (deadline: UInt64, event: Event)? {
        var next: (deadline: UInt64, event: Event)?
        for harness in harnesses {
            guard let deadline = harness.nextTimerDeadline else { continue }
            if next == nil || deadline < next!.deadline { next = (deadline, .timers(harness)) }
        }
        let alarm = state.withLock { $0.alarms.min { ($0.deadline, $0.id) < ($1.deadline, $1.id) } }
        if let alarm, next == nil || alarm.deadline < next!.deadline { next = (alarm.deadline, .alarm(alarm)) }
        return next
    }

    /// Moves the clock to `target` (never back), in SwiftNIO's `EmbeddedEventLoop.advanceTime` and
    /// swift-clocks' `TestClock.advance` order: first every running thread of the clock runs the
    /// work already queued, at the time it was queued (a paused one keeps its queue); then each
    /// deadline on the way, in order, is reached in turn: the clock stops there, the thread whose
    /// timers fall due runs them, a caller whose timeout passes is released, and every running
    /// thread runs until idle (the work those timers queued) before the next deadline. Then the
    /// clock is set to `target`, and the threads settle again.
    /// - Throws: `TestHarness.SettleError` when a thread stays busy longer than its settle bound.
    public func advance(to target: ContinuousClock.Instant) throws(TestHarness.SettleError) {
        precondition(ThreadCore.current?.virtualClock !== self,
                     "VirtualClock.advance called on one of the clock's own threads: it would wait on itself")
        advancing.lock()
        defer { advancing.unlock() }
        let targetNanoseconds = nanoseconds(of: target)
        for harness in harnesses { try harness.settleForClock() }
        while let (deadline, event) = nextEvent(), deadline <= targetNanoseconds {
            move(to: deadline)
            switch event {
            case .alarm(let alarm):
                cancelAlarm(alarm.id)
                alarm.fire()
            case .timers(let harness):
                try harness.serviceTimers()
            }
            for harness in harnesses { try harness.settleForClock() }
        }
        move(to: targetNanoseconds)
        for harness in harnesses { try harness.settleForClock() }
    }

    private func nanoseconds(of instant: ContinuousClock.Instant) -> UInt64 {
        let offset = originInstant.duration(to: instant).clampedNanoseconds
        return originNanoseconds &+ UInt64(offset)
    }

    private func move(to nanoseconds: UInt64) {
        state.withLock { state in
            let offset = nanoseconds &- originNanoseconds
            if nanoseconds > originNanoseconds, offset > state.offset { state.offset = offset }
        }
    }
}
