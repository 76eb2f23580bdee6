import Foundation

extension LongThread {
    /// Queues `work` on this thread's run loop and returns at once.
    ///
    /// The Swift counterpart of `performSelector:onThread:withObject:waitUntilDone:NO modes:`.
    ///
    /// - Runs on: this thread, in a run-loop pass in one of `modes` (`.common`: any common mode).
    /// - Order: after all work queued earlier by the same producer, whether by `perform`, `sync`
    ///   or `run`. Work for a mode the loop is not running waits, in order, for that mode.
    /// - Called on this thread: queued behind the work already waiting.
    /// - Blocks: never, unless ``Options/queueLimit`` is set to block when full (``QueueLimit``);
    ///   with a limit that throws, a full queue throws ``LongThreadError/queueFull``.
    /// - After stop: throws ``LongThreadError/stopped`` once a stop has begun. Work accepted before
    ///   a `.discard` stop is released unrun.
    /// - Callable from: any thread, task or actor.
    /// - Taking it back: ``submit(modes:label:group:_:)`` queues the same way and returns a handle.
    ///
    /// - Parameters:
    ///   - modes: The run-loop modes `work` may run in.
    ///   - label: Names the work in stall reports (``StallMonitor``).
    ///   - work: The work.
    /// - Throws: ``LongThreadError/stopped``, ``LongThreadError/noModes`` for an empty `modes`,
    ///   ``LongThreadError/queueFull``.
    public func perform(
        modes: [RunLoop.Mode],
        label: String? = nil,
        _ work: @escaping @Sendable () -> Void
    ) throws(LongThreadError) {
        try perform(waitUntilDone: false, modes: Optional(modes), label: label, work)
    }

    /// Queues `work` in the default mode and returns at once: ``perform(modes:label:_:)`` with
    /// `modes: [.default]`, without building a modes array on each call.
    ///
    /// - Parameters:
    ///   - label: Names the work in stall reports (``StallMonitor``).
    ///   - work: The work.
    /// - Throws: ``LongThreadError/stopped``, ``LongThreadError/queueFull``.
    public func perform(label: String? = nil, _ work: @escaping @Sendable () -> Void) throws(LongThreadError) {
        try perform(waitUntilDone: false, modes: nil, label: label, work)
    }

    /// Queues `work` on this thread's run loop, or runs it there and waits: the Swift counterpart of
    /// `performSelector:onThread:withObject:waitUntilDone:modes:`.
    ///
    /// - Runs on: this thread, in a run-loop pass in one of `modes` (`.common`: any common mode).
    /// - Order: as ``perform(modes:label:_:)``.
    /// - Called on this thread: with `waitUntilDone`, `work` runs inline at once, so a thread never
    ///   waits on itself; otherwise it is queued behind the work already waiting.
    /// - Blocks: with `waitUntilDone`, until `work` has returned. Queue limit: as
    ///   ``perform(modes:label:_:)``.
    /// - After stop: throws ``LongThreadError/stopped`` once a stop has begun. Work accepted before
    ///   a `.discard` stop is released unrun; a waiting caller gets ``LongThreadError/discarded``.
    /// - Callable from: any thread; not from async code, where waiting would block a thread of the
    ///   cooperative pool (use ``run(modes:label:_:)``, or ``perform(modes:label:_:)`` not to wait).
    ///
    /// - Parameters:
    ///   - waitUntilDone: Whether to block until `work` has run.
    ///   - modes: The run-loop modes `work` may run in.
    ///   - label: Names the work in stall reports (``StallMonitor``).
    ///   - work: The work.
    /// - Throws: ``LongThreadError/stopped``, ``LongThreadError/discarded`` (waiting only),
    ///   ``LongThreadError/noModes`` for an empty `modes`, ``LongThreadError/queueFull``.
    @available(*, noasync, message: "blocks a cooperative thread: use 'run', or 'perform' without waitUntilDone")
    public func perform(
        waitUntilDone: Bool,
        modes: [RunLoop.Mode],
        label: String? = nil,
        _ work: @escaping @Sendable () -> Void
    ) throws(LongThreadError) {
        try perform(waitUntilDone: waitUntilDone, modes: Optional(modes), label: label, work)
    }

    /// Queues `work` in the default mode, or runs it and waits:
    /// ``perform(waitUntilDone:modes:label:_:)`` with `modes: [.default]`.
    ///
    /// - Parameters:
    ///   - waitUntilDone: Whether to block until `work` has run.
    ///   - label: Names the work in stall reports (``StallMonitor``).
    ///   - work: The work.
    /// - Throws: ``LongThreadError/stopped``, ``LongThreadError/discarded`` (waiting only).
    @available(*, noasync, message: "blocks a cooperative thread: use 'run', or 'perform' without waitUntilDone")
    public func perform(
        waitUntilDone: Bool,
        label: String? = nil,
        _ work: @escaping @Sendable () -> Void
    ) throws(LongThreadError) {
        try perform(waitUntilDone: waitUntilDone, modes: nil, label: label, work)
    }

    @inline(__always)
    func perform(
        waitUntilDone: Bool,
        modes: [RunLoop.Mode]?,
        label: String?,
        _ work: @escaping @Sendable () -> Void
    ) throws(LongThreadError) {
        if !waitUntilDone {
            // A thread with a queue limit takes its own path, so that the plain post keeps nothing
            // alive for a second attempt, and moves its item into the queue without a copy.
            if core.hasQueueLimit {
                let item = WorkItem.make(work, label: label)
                try core.postWaitingForRoom { () throws(LongThreadError) in try core.enqueue(item, modes: modes) }
            } else if let item = WorkItem.boxed(work, label: label) {
                // A propagator's capture and a label's box are made before the lock is taken.
                try core.enqueue(item, modes: modes)
            } else {
                // The common post (also when a propagator captured nothing): the closure goes
                // straight into its queue entry, under the lock, without a copy.
                try core.enqueue(.fireAndForget(work), modes: modes)
            }
            return
        }
        if try runsInline() {
            work()
            return
        }
        try runAndWait(modes: modes, label: label, work)
    }

    /// The one rule for every spelling that waits for its work (`sync`, `perform(waitUntilDone:)`,
    /// their `timeout:` forms, `run`): called on this thread, the work runs inline (a thread never
    /// waits on itself), and, as a post from anywhere else, it is refused with `.stopped` once a
    /// stop has begun (the inline shortcut must not outlive the cut-off). Returns whether the
    /// caller runs the work inline; each of those spellings asks here before it picks its path.
    @usableFromInline
    func runsInline() throws(LongThreadError) -> Bool {
        guard isCurrent else { return false }
        guard core.shared.withLock({ $0.lifecycle.acceptsWork }) else { throw .stopped }
        return true
    }

    /// Queues `body` and blocks until it ran on this thread; throws `.discarded` if a stop dropped
    /// it. Not on this thread (the caller checks). The non-generic half of `sync`.
    @usableFromInline
    func runAndWait(modes: [RunLoop.Mode]?, label: String?, _ body: () -> Void) throws(LongThreadError) {
        try withoutActuallyEscaping(body) { (escapable) throws(LongThreadError) in
            let request = BlockingWork(escapable, label: label)
            // The loop thread was on a CPU when the post came: worth a spin even under load.
            var loopAwake = false
            do throws(LongThreadError) {
                try core.postWaitingForRoom { () throws(LongThreadError) in
                    loopAwake = try core.enqueue(.waiting(request), modes: modes)
                }
            } catch {
                request.abandon()
                throw error
            }
            try request.waitForOutcome(postedTo: core, loopAwake: loopAwake)
        }
    }

    /// Runs `work` on this thread and returns its value, like `DispatchQueue.sync`.
    ///
    /// - Runs on: this thread, in a run-loop pass in one of `modes`.
    /// - Order: as ``perform(modes:label:_:)``.
    /// - Called on this thread: runs `work` inline at once, so a thread never waits on itself.
    /// - Blocks: until `work` has returned or thrown (``sync(timeout:modes:label:group:_:)`` bounds it).
    /// - Queue limit: as ``perform(waitUntilDone:modes:label:_:)``.
    /// - After stop: throws ``LongThreadError/stopped``; if a `.discard` stop drops the work, throws
    ///   ``LongThreadError/discarded``.
    /// - Callable from: any thread; not from async code, where it would block a thread of the
    ///   cooperative pool: there, use ``run(modes:label:_:)``, which suspends instead.
    ///
    /// `work` is `sending`: it may capture what the caller owns (it runs while the caller waits),
    /// but not state isolated to the caller's actor, which would then be touched from this thread.
    /// - Parameters:
    ///   - modes: The run-loop modes `work` may run in.
    ///   - label: Names the work in stall reports (``StallMonitor``).
    ///   - work: The work; its value is returned.
    /// - Returns: What `work` returns.
    /// - Throws: what `work` throws, or a ``LongThreadError``.
    @inlinable
    @available(*, noasync, message: "blocks a cooperative thread: use 'try await thread.run { ... }'")
    public func sync<T>(
        modes: [RunLoop.Mode],
        label: String? = nil,
        _ work: sending () throws -> T
    ) throws -> T {
        try sync(modes: Optional(modes), label: label, work)
    }

    /// Runs `work` on this thread in the default mode and returns its value:
    /// ``sync(modes:label:_:)`` with `modes: [.default]`, without building a modes array.
    ///
    /// - Parameters:
    ///   - label: Names the work in stall reports (``StallMonitor``).
    ///   - work: The work; its value is returned.
    /// - Returns: What `work` returns.
    /// - Throws: what `work` throws, or a ``LongThreadError``.
    @inlinable
    @available(*, noasync, message: "blocks a cooperative thread: use 'try await thread.run { ... }'")
    public func sync<T>(label: String? = nil, _ work: sending () throws -> T) throws -> T {
        try sync(modes: nil, label: label, work)
    }

    // Inlinable, so that callers specialize it for their `T`: unspecialized, it looked up generic
    // metadata at run time on each call. The outcome lives in the caller's frame; `runAndWait` is
    // the non-generic rest.
    @inlinable
    func sync<T>(modes: [RunLoop.Mode]?, label: String?, _ work: sending () throws -> T) throws -> T {
        if try runsInline() { return try work() }
        var outcome: Result<T, any Error>?
        try runAndWait(modes: modes, label: label) { outcome = Result { try work() } }
        return try outcome!.get()
    }

    /// Runs `work` on this thread and returns its value, suspending the calling task meanwhile.
    ///
    /// - Runs on: this thread, in a run-loop pass in one of `modes`.
    /// - Order: as ``perform(modes:label:_:)``.
    /// - Called on this thread: runs `work` inline at once.
    /// - Cancellation: if the task is cancelled before `work` started, `work` is skipped and
    ///   `CancellationError` is thrown at once; once started, `work` completes.
    /// - Queue limit: with ``Options/queueLimit``, a full queue suspends the task (holding no
    ///   thread) until there is room, whatever ``QueueLimit/whenFull`` says; cancelling the task
    ///   meanwhile throws `CancellationError`.
    /// - After stop: throws ``LongThreadError/stopped``; if a `.discard` stop drops the work, throws
    ///   ``LongThreadError/discarded``.
    /// - Callable from: any task or actor.
    /// - Parameters:
    ///   - modes: The run-loop modes `work` may run in.
    ///   - label: Names the work in stall reports (``StallMonitor``).
    ///   - work: The work; its value is returned.
    /// - Returns: What `work` returns.
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
    ///
    /// - Parameters:
    ///   - label: Names the work in stall reports (``StallMonitor``).
    ///   - work: The work; its value is returned.
    /// - Returns: What `work` returns.
    /// - Throws: what `work` throws, `CancellationError`, or a ``LongThreadError``.
    public func run<T: Sendable>(label: String? = nil, _ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await run(modes: nil, label: label, work)
    }

    @usableFromInline
    func run<T: Sendable>(
        modes: [RunLoop.Mode]?,
        label: String?,
        _ work: @escaping @Sendable () throws -> T
    ) async throws -> T {
        // Cancellation first: a cancelled task hears CancellationError, on this thread after a
        // stop too, as it would from anywhere else.
        if isCurrent { try Task.checkCancellation() }
        if try runsInline() { return try work() }
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

/// Queues `work` on `thread` and returns at once: the Swift counterpart of
/// `performSelector:onThread:withObject:waitUntilDone:NO modes:`.
///
/// Same contract as ``LongThread/perform(modes:label:_:)``.
/// - Parameters:
///   - thread: The thread to run `work` on.
///   - modes: The run-loop modes `work` may run in.
///   - label: Names the work in stall reports (``StallMonitor``).
///   - work: The work.
/// - Throws: ``LongThreadError/stopped`` where Foundation would raise
///   `NSDestinationInvalidException`; ``LongThreadError/noModes`` for an empty `modes`.
public func perform(
    onThread thread: LongThread,
    modes: [RunLoop.Mode] = [.default],
    label: String? = nil,
    _ work: @escaping @Sendable () -> Void
) throws(LongThreadError) {
    try thread.perform(modes: modes, label: label, work)
}

/// Queues `work` on `thread`, or runs it there and waits: the Swift counterpart of
/// `performSelector:onThread:withObject:waitUntilDone:modes:`.
///
/// Same contract as ``LongThread/perform(waitUntilDone:modes:label:_:)``; not from async code.
/// - Parameters:
///   - thread: The thread to run `work` on.
///   - waitUntilDone: Whether to block until `work` has run.
///   - modes: The run-loop modes `work` may run in.
///   - label: Names the work in stall reports (``StallMonitor``).
///   - work: The work.
/// - Throws: ``LongThreadError/stopped`` where Foundation would raise
///   `NSDestinationInvalidException`; ``LongThreadError/discarded`` when a waited-for item is
///   dropped by a discarding stop; ``LongThreadError/noModes`` for an empty `modes`.
@available(*, noasync, message: "blocks a cooperative thread: use 'run', or 'perform' without waitUntilDone")
public func perform(
    onThread thread: LongThread,
    waitUntilDone: Bool,
    modes: [RunLoop.Mode] = [.default],
    label: String? = nil,
    _ work: @escaping @Sendable () -> Void
) throws(LongThreadError) {
    try thread.perform(waitUntilDone: waitUntilDone, modes: modes, label: label, work)
}
