import Foundation

extension LongThread {
    /// The time on this thread's clock, the one its timers and deadlines follow:
    /// `ContinuousClock.now`, except on a thread made by LongThreadsTestKit, whose clock the test
    /// advances. Read it, rather than `ContinuousClock.now`, to compute a deadline for
    /// ``perform(at:modes:label:group:_:)`` or to measure an interval the thread's timers also
    /// measure (how long a connection has been idle), so that the code keeps time in a test too.
    /// - Callable from: any thread, task or actor.
    public var now: ContinuousClock.Instant { core.clockNow }

    /// Runs `work` on this thread at `deadline`, like Android's `postAtTime` and NIO's
    /// `scheduleTask(deadline:)`.
    ///
    /// - Runs on: this thread, in a run-loop pass in one of `modes`, once `deadline` has passed (at
    ///   the loop's next pass of its timers if it has already).
    /// - Order: by deadline, whether or not it has passed, as NIO and Android order scheduled
    ///   work: of two deadlines already passed, the earlier runs first, whatever the order they
    ///   were posted in. Work posted for the same deadline and modes runs in the order it was
    ///   posted. Timers of ``perform(after:modes:label:group:_:)`` are ordered with it by their deadline (now
    ///   plus the delay).
    /// - Against queued work: deadline work waits in the run loop as a timer, not in the queue, and
    ///   is not ordered with ``perform(modes:label:_:)`` work: a deadline already passed neither
    ///   overtakes queued work nor waits for all of it. It runs at the loop's next pass of its
    ///   timers, which the loop makes between batches of queued work: work queued before it, and
    ///   some queued after it, may run first (about a millisecond of it at most, or the one item
    ///   running then, however long). It does not count toward a ``QueueLimit``.
    /// - Cancellation: through the returned handle, or its `group`'s ``WorkGroup/cancelAll()``,
    ///   until it starts. A cancel releases the closure at once, and the deadline's timer too
    ///   when no other work waits for the same deadline and modes.
    /// - After stop: throws ``LongThreadError/stopped``; a stop before the deadline drops the work
    ///   (its handle's state becomes ``QueuedWork/State/discarded``).
    /// - Parameters:
    ///   - deadline: When the work becomes due.
    ///   - modes: The run-loop modes the work may run in.
    ///   - label: Names the work (kept on the handle).
    ///   - group: A group to take the work back with, among others (``WorkGroup/cancelAll()``),
    ///     like Android's `removeCallbacksAndMessages(token)` for delayed messages.
    ///   - work: The work.
    /// - Returns: the handle, to take the work back; keeping it is optional.
    /// - Throws: ``LongThreadError/stopped``, ``LongThreadError/noModes``,
    ///   ``LongThreadError/tooManyModes(limit:)``.
    /// - Callable from: any thread, task or actor, including this thread.
    @discardableResult
    public func perform(
        at deadline: ContinuousClock.Instant,
        modes: [RunLoop.Mode] = [.default],
        label: String? = nil,
        group: WorkGroup? = nil,
        _ work: @escaping @Sendable () -> Void
    ) throws(LongThreadError) -> QueuedWork {
        let item = QueuedWork(work, label: label, group: group, waitable: false, withdrawable: true)
        try item.post(on: core, at: deadline, modes: modes)
        return item
    }

    /// Runs `work` on this thread at `deadline` and returns its value.
    ///
    /// - Order: as ``perform(at:modes:label:group:_:)``: by deadline, a deadline already passed
    ///   included; not ordered with queued work.
    /// - Cancellation: cancelling the awaiting task before the work started skips it and throws
    ///   `CancellationError` at once; its closure goes at once, and the deadline's timer too when
    ///   no other work waits for the same deadline and modes. (Awaited work joins no
    ///   ``WorkGroup``: cancelling its task is how it is taken back.)
    /// - After stop: throws ``LongThreadError/stopped``; a stop before the deadline throws
    ///   ``LongThreadError/discarded``.
    /// - Parameters:
    ///   - deadline: When the work becomes due.
    ///   - modes: The run-loop modes the work may run in.
    ///   - work: The work.
    /// - Throws: what `work` throws, `CancellationError`, or a ``LongThreadError``.
    /// - Callable from: any task or actor.
    public func run<T: Sendable>(
        at deadline: ContinuousClock.Instant,
        modes: [RunLoop.Mode] = [.default],
        _ work: @escaping @Sendable () throws -> T
    ) async throws -> T {
        let withdrawal = Withdrawal()
        return try await AsyncWork(work).value(posting: { (request) throws(LongThreadError) in
            let bucket = try core.enqueue(request, at: deadline, modes: modes)
            withdrawal.hold { [weak bucket, weak request] in
                if let bucket, let request { bucket.withdraw(request) }
            }
        }, onCancel: { withdrawal.withdraw() })
    }

    /// Queues `work` and waits at most `timeout` for it to run, like Android's
    /// `runWithScissors(r, timeout)`.
    ///
    /// - When the time passes: if `work` had not started it is taken back and never runs; if it
    ///   had, it completes on the thread and the caller is not told when. Either way the caller
    ///   gets ``LongThreadError/timedOut``.
    /// - With `waitUntilDone: false`: queues `work` and returns at once, as
    ///   ``perform(waitUntilDone:modes:label:_:)``; `timeout` has no effect.
    /// - Called on this thread: with `waitUntilDone`, runs `work` inline at once (no timeout).
    /// - After stop: throws ``LongThreadError/stopped`` once a stop has begun, on this thread too
    ///   (the rule of every blocking spelling).
    /// - Queue limit: as ``perform(waitUntilDone:modes:label:_:)``; time spent blocked for room
    ///   under ``QueueLimit/WhenFull/block`` does not count toward `timeout`.
    /// - Parameters:
    ///   - waitUntilDone: Whether to wait for `work`.
    ///   - timeout: How long to wait for `work` to be done.
    ///   - modes: The run-loop modes the work may run in.
    ///   - label: Names the work in stall reports.
    ///   - group: A group that can take the work back before it starts
    ///     (``WorkGroup/cancelAll()``); the waiting caller then gets ``LongThreadError/cancelled``.
    ///   - work: The work.
    /// - Throws: ``LongThreadError/timedOut``, ``LongThreadError/cancelled``,
    ///   ``LongThreadError/stopped``, ``LongThreadError/discarded``, ``LongThreadError/queueFull``,
    ///   ``LongThreadError/noModes``.
    /// - Callable from: any thread; not from async code. Blocks up to `timeout`.
    @available(*, noasync, message: "blocks a cooperative thread: use 'run' (with a task deadline) instead")
    public func perform(
        waitUntilDone: Bool,
        timeout: Duration,
        modes: [RunLoop.Mode] = [.default],
        label: String? = nil,
        group: WorkGroup? = nil,
        _ work: @escaping @Sendable () -> Void
    ) throws(LongThreadError) {
        guard waitUntilDone else {
            try submit(modes: modes, label: label, group: group, work)
            return
        }
        if try runsInline() {
            work()
            return
        }
        let item = QueuedWork(work, label: label, group: group, waitable: true)
        try item.post(on: core, modes: modes)
        try item.waitForOutcome(timeout: timeout, clock: core.virtualClock)
    }

    /// Runs `work` on this thread and returns its value, waiting at most `timeout`.
    ///
    /// - When the time passes: if `work` had not started it is taken back and never runs; if it
    ///   had, it completes on the thread and its result is dropped. Either way the caller gets
    ///   ``LongThreadError/timedOut``. So `work` is escaping and `Sendable`, unlike
    ///   ``sync(modes:label:_:)``'s: it may outlive the call.
    /// - Called on this thread: runs `work` inline at once (no timeout).
    /// - After stop: throws ``LongThreadError/stopped`` once a stop has begun, on this thread too
    ///   (the rule of every blocking spelling); a `.discard` stop before `work` started throws
    ///   ``LongThreadError/discarded``.
    /// - Queue limit: as ``sync(modes:label:_:)``.
    /// - Parameters:
    ///   - timeout: How long to wait for the value.
    ///   - modes: The run-loop modes the work may run in.
    ///   - label: Names the work in stall reports.
    ///   - group: A group that can take the work back before it starts
    ///     (``WorkGroup/cancelAll()``); the waiting caller then gets ``LongThreadError/cancelled``.
    ///   - work: The work.
    /// - Throws: what `work` throws, ``LongThreadError/timedOut``, ``LongThreadError/cancelled``,
    ///   or another ``LongThreadError``.
    /// - Callable from: any thread; not from async code. Blocks up to `timeout`.
    @available(*, noasync, message: "blocks a cooperative thread: use 'try await thread.run { ... }'")
    public func sync<T: Sendable>(
        timeout: Duration,
        modes: [RunLoop.Mode] = [.default],
        label: String? = nil,
        group: WorkGroup? = nil,
        _ work: @escaping @Sendable () throws -> T
    ) throws -> T {
        if try runsInline() { return try work() }
        let box = ResultBox<T>()
        let item = QueuedWork({ box.result = Result { try work() } }, label: label, group: group, waitable: true)
        try item.post(on: core, modes: modes)
        try item.waitForOutcome(timeout: timeout, clock: core.virtualClock)
        return try box.result!.get()
    }
}

/// The value of a `sync(timeout:)`: written on the thread before the work ends, read by the caller
/// after (the item's lock orders the two).
private final class ResultBox<T>: @unchecked Sendable {
    var result: Result<T, any Error>?
}
