@_spi(TestKit) import LongThreads

/// A real `LongThread` on virtual time, whose queue a test may step, and which
/// fails on demand.
///
/// ``thread`` is an ordinary `LongThread`: hand it to the code under test. It keeps the whole
/// contract of a LongThread (FIFO per producer, modes, stop draining or discarding, `tearDown`,
/// errors); only its time and, when paused, its pace belong to the test:
/// - **Virtual time**: delayed work, deadlines, repeating timers and the timeouts of
///   `sync(timeout:)` follow ``clock``, a ``TestClock`` the test advances (``advance(by:)``).
/// - **Stepping**: a paused thread (``isPaused``) runs queued work only when the test says so:
///   ``runOne()``, ``runUntilIdle()``; ``pendingLabels`` and ``nextDeadline`` show what waits.
/// - **Faults**: ``refuseNextPost(with:)``, ``stop(afterItemLabeled:pending:)``, and threads
///   that fail to start or to set up (``init(name:clock:paused:options:settleTimeout:startFailure:)``).
///
/// ```swift
/// @Test func retryAfterThirtySeconds() throws {
///     let test = try TestThread(name: "client")
///     let fired = Mutex(false)
///     try test.thread.perform(after: .seconds(30)) { fired.withLock { $0 = true } }
///     try test.advance(by: .seconds(29))
///     #expect(!fired.withLock { $0 })
///     try test.advance(by: .seconds(1))
///     #expect(fired.withLock { $0 })
/// }
/// ```
///
/// See <doc:TestingWithTheKit> for what cannot be virtualised.
/// - Threading: every member is callable from any thread or task except ``thread`` itself (the
///   stepping calls wait for it). A test drives one thread from one place at a time.
public final class TestThread: Sendable {
    /// The thread: a real `LongThread`, for the code under test.
    public let thread: LongThread
    /// The clock the thread's time follows.
    public let clock: TestClock
    let harness: TestHarness

    /// Starts a LongThread on `clock`, paused or running.
    ///
    /// - Parameters:
    ///   - name: The thread's name.
    ///   - clock: The clock its time follows; share one among threads to order their deadlines.
    ///   - paused: Whether the test steps its queue (``runOne()``, ``runUntilIdle()``) from the start.
    ///   - options: The thread's options (`setUp`, `tearDown`, `queueLimit`, an instrument...).
    ///     A `setUp` that throws makes this initializer throw
    ///     `LongThreadError.setUpFailed(_:)`, as `LongThread.init` does.
    ///   - settleTimeout: How long, in real time, a stepping call waits for the thread before it
    ///     throws ``TestThreadError/stillBusy(thread:waitingFor:)``.
    ///   - startFailure: When given, the thread does not start: this initializer throws it, as
    ///     `LongThread.init` would (`LongThreadError.cannotStart(errno:)` for a
    ///     refused pthread, say, or `LongThreadError.outOfResources(errno:)`).
    /// - Throws: what `LongThread.init` throws, or `startFailure`.
    /// - Callable from: any thread.
    public init(
        name: String? = nil,
        clock: TestClock = TestClock(),
        paused: Bool = false,
        options: LongThread.Options = .init(),
        settleTimeout: Duration = .seconds(10),
        startFailure: LongThreadError? = nil
    ) throws(LongThreadError) {
        let harness = TestHarness(clock: clock.base, paused: paused, settleTimeout: settleTimeout, startFailure: startFailure)
        var options = options
        options.harness = harness
        self.thread = try LongThread(name: name, options: options)
        self.clock = clock
        self.harness = harness
    }

    // MARK: - Time

    /// Advances ``clock`` by `duration`: work already queued runs first, then what falls due runs
    /// in deadline order, each deadline followed by the work it queued (``TestClock/advance(by:)``).
    /// A paused thread runs its due timers and deadline work but keeps its queue.
    /// - Throws: ``TestThreadError/stillBusy(thread:waitingFor:)``.
    /// - Callable from: any thread or task but the clock's threads. Blocks until done.
    public func advance(by duration: Duration) throws(TestThreadError) {
        try clock.advance(by: duration)
    }

    /// The earliest deadline of this thread's delayed work, deadline work and timers; nil when none.
    /// - Callable from: any thread.
    public var nextDeadline: ContinuousClock.Instant? { harness.nextDeadline }

    // MARK: - Stepping

    /// Whether the thread's queued work waits for the test (``runOne()``, ``runUntilIdle()``).
    /// Unpausing lets it run freely again. A stop opens the gate for good: the thread drains or
    /// discards as the stop says. Held by the gate: work queued by `perform`, `sync`, `run` and
    /// the like, and the jobs of actors pinned to the thread. Not held: work posted with
    /// `performAtFrontOfQueue` (it jumps the queue between two items), the library's own work (a
    /// `ThreadBound` value whose last handle is released is destroyed before the next waiting
    /// item, as on a real thread), timers and deadline work (they follow the clock), and
    /// descriptor-source and observer callouts.
    /// - Callable from: any thread.
    public var isPaused: Bool {
        get { harness.isPaused }
        set { harness.isPaused = newValue }
    }

    /// Runs the next queued item of a paused thread, and returns once it has run and the thread
    /// waits again (or is idle). Work posted by the item waits for the next step.
    /// - Returns: false when nothing was queued.
    /// - Throws: ``TestThreadError/stillBusy(thread:waitingFor:)``.
    /// - Callable from: any thread or task but ``thread``. Blocks until the item ran.
    @discardableResult
    public func runOne() throws(TestThreadError) -> Bool {
        try settling { () throws(TestHarness.SettleError) in try harness.runOne() }
    }

    /// Runs queued work until the queue is empty and the thread idle, work that this work posts
    /// included, then leaves the thread paused if it was. Time does not move: work for a deadline
    /// waits for ``advance(by:)``.
    /// - Throws: ``TestThreadError/stillBusy(thread:waitingFor:)``, for work that keeps the thread
    ///   busy longer than the settle timeout.
    /// - Callable from: any thread or task but ``thread``.
    public func runUntilIdle() throws(TestThreadError) {
        try settling { () throws(TestHarness.SettleError) in try harness.runUntilIdle() }
    }

    /// The labels of the queued work, in the order it will run (nil for work posted without a
    /// `label:`). Meaningful on a paused thread; on a running one it waits for the thread to be idle.
    /// Deadline work and timers wait on the clock, not in the queue: see ``nextDeadline``.
    ///
    /// Never throws, so a non-throwing closure (`#expect`, a polling condition) can read it:
    /// - A stopped thread has nothing queued (a drain ran its work, a discard dropped it): `[]`.
    /// - A thread still busy after the settle timeout, where ``runOne()`` would throw
    ///   ``TestThreadError/stillBusy(thread:waitingFor:)``: nil, as its queue cannot be read whole.
    /// - Callable from: any thread or task but ``thread``.
    public var pendingLabels: [String?]? {
        try? harness.pendingLabels()
    }

    /// How many items are queued (``pendingLabels``'s count), by the same rules: 0 once the thread
    /// has stopped; nil while it stays busy past the settle timeout.
    /// - Callable from: any thread or task but ``thread``.
    public var pendingCount: Int? {
        pendingLabels?.count
    }

    // MARK: - Faults

    /// The next post to the thread (any spelling that queues work or schedules it for later)
    /// throws `error` instead of accepting its work; later posts are accepted again. Use
    /// `LongThreadError.queueFull` to test a producer's backpressure path, and
    /// `LongThreadError.stopped` to test its path for a thread that went away.
    /// Swift concurrency jobs (an actor on the thread) are never refused, as on a real thread, nor
    /// is the library's own work (a `ThreadBound` value's release): the refusal waits for the
    /// test's own next post.
    /// - Callable from: any thread.
    public func refuseNextPost(with error: LongThreadError) {
        harness.refuseNextPost(with: error)
    }

    /// Once the queued item labelled `label` has run, a stop with `pending` begins before the
    /// thread's next queued item: a stop arriving between two given items. With
    /// `LongThread.PendingWork.discard` the items after it never run and their
    /// waiters get `LongThreadError.discarded`.
    /// - Callable from: any thread.
    public func stop(afterItemLabeled label: String, pending: LongThread.PendingWork) {
        harness.stop(afterItemLabeled: label, pending: pending)
    }
}
