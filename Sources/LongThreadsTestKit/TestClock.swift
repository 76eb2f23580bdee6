@_spi(TestKit) import LongThreads

/// Virtual time for the ``TestThread``s made with it: it stands still until the test advances it.
///
/// Every time-based feature of a test thread follows this clock instead of the real one:
/// `LongThread.perform(after:modes:label:group:_:)` and `run(after:)`,
/// `LongThread.perform(at:modes:label:group:_:)` and `run(at:)`, repeating timers
/// (`LongThread.schedule(every:tolerance:modes:_:)`), and the timeouts of
/// `sync(timeout:)` and `perform(waitUntilDone:timeout:)`. ``advance(by:)`` moves the clock,
/// firing what falls due in deadline order, so a 30-second timeout is tested in milliseconds.
///
/// Its instants are `ContinuousClock` instants, starting at the real now when the clock is made:
/// compute a deadline for `perform(at:)` from ``now``, not from `ContinuousClock.now`.
///
/// Several threads may share one clock: an advance then orders the deadlines of all of them.
///
/// - Threading: every member is callable from any thread or task except the clock's own threads
///   (``advance(by:)`` waits for them, and traps if called on one of them).
public final class TestClock: Sendable {
    let base: VirtualClock

    /// A clock whose time starts at the real now and moves only when advanced.
    public init() {
        base = VirtualClock()
    }

    /// The clock's time.
    /// - Callable from: any thread.
    public var now: ContinuousClock.Instant { base.now }

    /// How far the clock has been advanced since it was made.
    /// - Callable from: any thread.
    public var elapsed: Duration { base.elapsed }

    /// The earliest instant at which something waits on this clock: a timer or deadline work of
    /// one of its threads, or a caller's timeout. Nil when nothing waits.
    /// - Callable from: any thread.
    public var nextDeadline: ContinuousClock.Instant? { base.nextDeadline }

    /// Moves the clock forward by `duration`, running what falls due on the way.
    ///
    /// First every running thread of the clock runs the work already queued, before the clock
    /// moves (SwiftNIO's `EmbeddedEventLoop` and swift-clocks' `TestClock` order): a test that
    /// posts and then advances sees that work run at the time it was posted, however slow the
    /// thread. Then the clock stops at each deadline on the way, earliest first: the thread whose
    /// timers or deadline work fall due runs them, on that thread, in their usual order (equal
    /// deadlines in the order scheduled); a caller whose `sync(timeout:)` or
    /// `perform(waitUntilDone:timeout:)` times out then is released with
    /// `LongThreadError.timedOut`; then every running thread of the clock runs its queue until
    /// idle (the work those timers queued), before the next deadline. Work that falls
    /// due on the way and schedules more work inside the interval (a repeating timer, a retry)
    /// runs too. At the end the clock reads `now + duration`, and every running thread is idle.
    ///
    /// A paused thread (``TestThread/isPaused``) runs its due timers and deadline work (they are
    /// not queued work) but keeps its queue for ``TestThread/runOne()`` and
    /// ``TestThread/runUntilIdle()``: so a test can let a caller's timeout pass while its work
    /// still waits.
    ///
    /// At one instant, a thread's due work runs before a caller's timeout at the same instant.
    /// - Parameter duration: How far to move; zero runs what is due now. Negative moves nothing.
    /// - Throws: ``TestThreadError/stillBusy(thread:waitingFor:)`` when a thread does not finish
    ///   its due work within its settle timeout (real time).
    /// - Callable from: any thread or task but the clock's own threads. Blocks until done.
    public func advance(by duration: Duration) throws(TestThreadError) {
        try advance(to: now + max(duration, .zero))
    }

    /// Moves the clock forward to `instant` (never back), as ``advance(by:)``.
    /// - Throws: ``TestThreadError/stillBusy(thread:waitingFor:)``.
    /// - Callable from: any thread or task but the clock's own threads. Blocks until done.
    public func advance(to instant: ContinuousClock.Instant) throws(TestThreadError) {
        try settling { () throws(TestHarness.SettleError) in try base.advance(to: instant) }
    }
}
