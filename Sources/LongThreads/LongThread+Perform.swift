import Foundation

extension LongThread {
    /// Queues `work` on this thread's run loop, or runs it and waits.
    ///
    /// The Swift counterpart of `performSelector:onThread:withObject:waitUntilDone:modes:`.
    ///
    /// - Runs on: this thread, in a run-loop pass in one of `modes` (`.common`: any common mode).
    /// - Order: after all work queued earlier by the same producer, whether by `perform`, `sync`
    ///   or `run`. Work for a mode the loop is not running waits, in order, for that mode.
    /// - Called on this thread: with `waitUntilDone`, `work` runs inline at once; otherwise it is
    ///   queued behind the work already waiting.
    /// - Blocks: only with `waitUntilDone`, until `work` has returned.
    /// - Queue limit: with ``Options/queueLimit``, a full queue throws
    ///   ``LongThreadError/queueFull`` or blocks until there is room, as the limit says
    ///   (``QueueLimit``).
    /// - After stop: throws ``LongThreadError/stopped`` once a stop has begun. Work accepted before
    ///   a `.discard` stop is released unrun; a waiting caller gets ``LongThreadError/discarded``.
    /// - Callable from: any thread, task or actor.
    /// - Taking it back: ``submit(modes:label:group:_:)`` queues the same way and returns a handle.
    ///
    /// - Parameters:
    ///   - waitUntilDone: Whether to block until `work` has run.
    ///   - modes: The run-loop modes `work` may run in.
    ///   - label: Names the work in stall reports (``StallMonitor``).
    ///   - work: The work.
    /// - Throws: ``LongThreadError/stopped``, ``LongThreadError/discarded`` (waiting only),
    ///   ``LongThreadError/noModes`` for an empty `modes`, ``LongThreadError/queueFull``.
    public func perform(
        waitUntilDone: Bool = false,
        modes: [RunLoop.Mode],
        label: String? = nil,
        _ work: @escaping @Sendable () -> Void
    ) throws(LongThreadError) {
        try perform(waitUntilDone: waitUntilDone, modes: Optional(modes), label: label, work)
    }

    /// Queues `work` in the default mode, or runs it and waits: ``perform(waitUntilDone:modes:label:_:)``
    /// with `modes: [.default]`, without building a modes array on each call.
    public func perform(
        waitUntilDone: Bool = false,
        label: String? = nil,
        _ work: @escaping @Sendable () -> Void
    ) throws(LongThreadError) {
        try perform(waitUntilDone: waitUntilDone, modes: nil, label: label, work)
    }

    @inline(__always)
    private func perform(
        waitUntilDone: Bool,
        modes: [RunLoop.Mode]?,
        label: String?,
        _ work: @escaping @Sendable () -> Void
    ) throws(LongThreadError) {
        if !waitUntilDone {
            // A thread with a queue limit takes its own path, so that the plain post keeps nothing
            // alive for a second attempt (measured: ~8 instructions per post, callgrind).
            if core.hasQueueLimit {
                try core.postWaitingForRoom { () throws(LongThreadError) in try core.enqueue(.make(work, label: label), modes: modes) }
            } else {
                try core.enqueue(.make(work, label: label), modes: modes)
            }
            return
        }
        if isCurrent {
            try acceptsInlineWork()
            work()
            return
        }
        try runAndWait(modes: modes, label: label, work)
    }

    /// On this thread, where waiting work runs inline: throws `.stopped` once a stop has begun, as
    /// a post from anywhere else would (the inline shortcut must not outlive the cut-off).
    @usableFromInline
    func acceptsInlineWork() throws(LongThreadError) {
        guard core.shared.withLock({ $0.lifecycle.acceptsWork }) else { throw .stopped }
    }

    /// Queues `body` and blocks until it ran on this thread; throws `.discarded` if a stop dropped
    /// it. Not on this thread (the caller checks). The non-generic half of `sync`.
    @usableFromInline
    func runAndWait(modes: [RunLoop.Mode]?, label: String?, _ body: () -> Void) throws(LongThreadError) {
        try withoutActuallyEscaping(body) { (escapable) throws(LongThreadError) in
            let request = BlockingWork(escapable, label: label)
            do throws(LongThreadError) {
                try core.postWaitingForRoom { () throws(LongThreadError) in try core.enqueue(.waiting(request), modes: modes) }
            } catch {
                request.abandon()
                throw error
            }
            try request.waitForOutcome()
        }
    }

    /// Runs `work` on this thread and returns its value, like `DispatchQueue.sync`.
    ///
    /// - Runs on: this thread, in a run-loop pass in one of `modes`.
    /// - Order: as ``perform(waitUntilDone:modes:label:_:)``.
    /// - Called on this thread: runs `work` inline at once, so a thread never waits on itself.
    /// - Blocks: until `work` has returned or thrown (``sync(timeout:modes:label:group:_:)`` bounds it).
    /// - Queue limit: as ``perform(waitUntilDone:modes:label:_:)``.
    /// - After stop: throws ``LongThreadError/stopped``; if a `.discard` stop drops the work, throws
    ///   ``LongThreadError/discarded``.
    /// - Callable from: any thread. From a task, prefer ``run(modes:label:_:)``, which suspends instead
    ///   of blocking a cooperative thread.
    ///
    /// `work` is `sending`: it may capture what the caller owns (it runs while the caller waits),
    /// but not state isolated to the caller's actor, which would then be touched from this thread.
    /// - Throws: what `work` throws, or a ``LongThreadError``.
    @inlinable
    public func sync<T>(
        modes: [RunLoop.Mode],
        label: String? = nil,
        _ work: sending () throws -> T
    ) throws -> T {
        try sync(modes: Optional(modes), label: label, work)
    }

    /// Runs `work` on this thread in the default mode and returns its value:
    /// ``sync(modes:label:_:)`` with `modes: [.default]`, without building a modes array.
    @inlinable
    public func sync<T>(label: String? = nil, _ work: sending () throws -> T) throws -> T {
        try sync(modes: nil, label: label, work)
    }

    // Inlinable, so that callers specialize it for their `T`: unspecialized, it looked up generic
    // metadata at run time on each call. The outcome lives in the caller's frame; `runAndWait` is
    // the non-generic rest.
    @inlinable
    func sync<T>(modes: [RunLoop.Mode]?, label: String?, _ work: sending () throws -> T) throws -> T {
        if isCurrent {
            try acceptsInlineWork()
            return try work()
        }
        var outcome: Result<T, any Error>?
        try runAndWait(modes: modes, label: label) { outcome = Result { try work() } }
        return try outcome!.get()
    }

    /// Runs `work` on this thread and returns its value, suspending the calling task meanwhile.
    ///
    /// - Runs on: this thread, in a run-loop pass in one of `modes`.
    /// - Order: as ``perform(waitUntilDone:modes:label:_:)``.
    /// - Called on this thread: runs `work` inline at once.
    /// - Cancellation: if the task is cancelled before `work` started, `work` is skipped and
    ///   `CancellationError` is thrown at once; once started, `work` completes.
    /// - Queue limit: with ``Options/queueLimit``, a full queue suspends the task (holding no
    ///   thread) until there is room, whatever ``QueueLimit/whenFull`` says; cancelling the task
    ///   meanwhile throws `CancellationError`.
    /// - After stop: throws ``LongThreadError/stopped``; if a `.discard` stop drops the work, throws
    ///   ``LongThreadError/discarded``.
    /// - Callable from: any task or actor.
    /// - Throws: what `work` throws, `CancellationError`, or a ``LongThreadError``.
    public func run<T: Sendable>(
        modes: [RunLoop.Mode],
        label: String? = nil,
        _ work: @escaping @Sendable () throws -> T
    ) async throws -> T {
        try await run(modes: Optional(modes), label: label, work)
    }

    /// Runs `work` on this thread in the default mode and returns its value:
    /// ``run(modes:label:_:)`` with `modes: [.default]`, without building a modes array.
    public func run<T: Sendable>(label: String? = nil, _ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await run(modes: nil, label: label, work)
    }

    private func run<T: Sendable>(
        modes: [RunLoop.Mode]?,
        label: String?,
        _ work: @escaping @Sendable () throws -> T
    ) async throws -> T {
        if isCurrent {
            try Task.checkCancellation()
            try acceptsInlineWork()
            return try work()
        }
        while true {
            do {
                return try await runOnce(modes: modes, label: label, work)
            } catch LongThreadError.queueFull {
                try await core.roomAvailable()
            }
        }
    }

    /// One attempt of `run`: throws `.queueFull` when the thread's queue is full.
    private func runOnce<T: Sendable>(
        modes: [RunLoop.Mode]?,
        label: String?,
        _ work: @escaping @Sendable () throws -> T
    ) async throws -> T {
        try await AsyncWork(work, label: label).value { (request) throws(LongThreadError) in
            try core.enqueue(.waiting(request), modes: modes)
        }
    }
}

/// Queues `work` on `thread`, or runs it there and waits: the Swift counterpart of
/// `performSelector:onThread:withObject:waitUntilDone:modes:`.
///
/// Same contract as ``LongThread/perform(waitUntilDone:modes:label:_:)``.
/// - Throws: ``LongThreadError/stopped`` where Foundation would raise
///   `NSDestinationInvalidException`; ``LongThreadError/discarded`` when a waited-for item is
///   dropped by a discarding stop.
public func perform(
    onThread thread: LongThread,
    waitUntilDone: Bool = false,
    modes: [RunLoop.Mode] = [.default],
    label: String? = nil,
    _ work: @escaping @Sendable () -> Void
) throws(LongThreadError) {
    try thread.perform(waitUntilDone: waitUntilDone, modes: modes, label: label, work)
}
