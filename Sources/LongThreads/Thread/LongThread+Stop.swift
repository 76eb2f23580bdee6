extension LongThread {
    /// Stops the thread: refuses new work, drains or discards what was accepted, ends the loop,
    /// and (with `waitUntilDone`) waits until the thread has ended.
    ///
    /// - Order: with `.drain`, every item accepted before the stop runs first, in order (items for
    ///   other modes run in those modes); with `.discard`, the item running now completes and every
    ///   other is released unrun, its waiter told ``LongThreadError/discarded`` only once every
    ///   closure the stop dropped (queued, delayed or in a timer) is released.
    /// - Cut-off: the stop begins when this is called; from then on every post throws
    ///   ``LongThreadError/stopped``, also from the thread's own tasks while it drains.
    /// - Blocks: with `waitUntilDone` (the default), until the loop has exited, the pthread has
    ///   ended and been joined, and the run loop, its sources and every queued closure are released.
    ///   The join spins first, at most 100 µs, while a CPU is spare and the thread was last seen
    ///   on another CPU (the thread's last steps take about what waking a sleeper costs);
    ///   otherwise, and after that, it sleeps.
    /// - Nested runs: a run of the loop that a task started itself
    ///   (``runNested(in:until:while:)``, `RunLoop.run(mode:before:)`, `CFRunLoopRunInMode`, in
    ///   any mode) and that is under way when the stop comes returns, so that the task can end;
    ///   the thread ends after that task.
    /// - Called on this thread (from a task): requests the stop and returns at once, whatever
    ///   `waitUntilDone` says; the thread ends after the current task. A later `stop()` or `deinit`
    ///   elsewhere joins it.
    /// - Repeated or concurrent calls: safe from any number of threads at once. A stop is sticky
    ///   and idempotent; a `.discard` request cuts a draining stop short, a `.drain` request after a
    ///   discarding one changes nothing. Every call with `waitUntilDone` returns once the thread ended.
    /// - Callable from: any thread, task, actor or `deinit`.
    ///
    /// > Warning: Waiting is only deadlock-free if the thread's current work does not itself wait
    /// > for the caller (for example a task that calls `sync` on the thread that is stopping this
    /// > one). Use ``waitUntilExit(timeout:)`` to bound such a wait.
    ///
    /// In async code, `stop(waitUntilDone: false)` requests the stop without blocking (what a
    /// cancellation or shutdown handler wants); `await` ``stop(pending:)-2hvqh`` waits by suspending.
    /// `waitUntilDone: true` there would hold a thread of the cooperative pool while the thread
    /// drains.
    ///
    /// - Parameters:
    ///   - waitUntilDone: Whether to block until the thread has ended and been joined.
    ///   - pending: What becomes of work accepted but not yet run: ``PendingWork/drain`` runs it,
    ///     ``PendingWork/discard`` releases it unrun.
    public func stop(waitUntilDone: Bool, pending: LongThread.PendingWork = .drain) {
        core.requestStop(pending)
        if waitUntilDone && !isCurrent {
            core.waitUntilExit(timeout: nil)
        }
    }

    /// Stops the thread and blocks until it has ended: ``stop(waitUntilDone:pending:)`` with
    /// `waitUntilDone: true`.
    ///
    /// Not from async code, where it would block a thread of the cooperative pool while the thread
    /// drains: there, `await` ``stop(pending:)-2hvqh``, which suspends instead, or
    /// `stop(waitUntilDone: false)` not to wait. Top-level code (a `main.swift` that awaits) picks
    /// this overload even when written `await thread.stop()`, since the two differ only in
    /// `async`: there, `stop(waitUntilDone: false)`, then `await` ``waitUntilExit()``.
    /// - Parameter pending: What becomes of work accepted but not yet run.
    /// - Callable from: any thread, actor or `deinit`; from the thread's own work it requests the
    ///   stop and returns at once.
    @available(
        *, noasync,
        message: "blocks a cooperative thread: use 'await thread.stop()' (in top-level code: 'thread.stop(waitUntilDone: false)', then 'await thread.waitUntilExit()')"
    )
    public func stop(pending: LongThread.PendingWork = .drain) {
        stop(waitUntilDone: true, pending: pending)
    }

    /// Stops the thread and suspends the calling task until it has ended and been joined, without
    /// blocking a thread of the cooperative pool while it drains.
    ///
    /// Everything ``stop(waitUntilDone:pending:)`` says of the order, the cut-off, nested runs and
    /// concurrent calls holds. Does not end early when the task is cancelled: the stop, once
    /// requested, is not taken back.
    /// - Parameter pending: What becomes of work accepted but not yet run: ``PendingWork/drain``
    ///   runs it, ``PendingWork/discard`` releases it unrun.
    /// - Callable from: any task. It runs on its caller's executor (`nonisolated(nonsending)`):
    ///   called from an actor pinned to this thread, or from a task on it, it is on the thread
    ///   itself, so it requests the stop and returns at once (a thread cannot await its own end);
    ///   the rest of the caller runs on the thread, as part of the drain, and the thread ends
    ///   after it. Awaiting the end there would resume the actor after its thread ended, where it
    ///   cannot run (see ``enqueue(_:)``).
    public nonisolated(nonsending) func stop(pending: LongThread.PendingWork = .drain) async {
        core.requestStop(pending)
        if !isCurrent {
            await core.waitUntilExit()
        }
    }

    /// Blocks until the thread has ended (after a stop, or after its owner died), at most `timeout`.
    ///
    /// Returns true once the thread has ended and been joined, false if `timeout` passed first or if
    /// called on the thread itself (which cannot wait for its own end). Does not request a stop.
    /// - Parameter timeout: The longest wait; nil waits as long as it takes.
    /// - Returns: Whether the thread has ended.
    /// - Callable from: any thread; not from async code, where it would block a thread of the
    ///   cooperative pool: there, `await` ``waitUntilExit()``, which suspends instead.
    @discardableResult
    @available(*, noasync, message: "blocks a cooperative thread: use 'await thread.waitUntilExit()'")
    public func waitUntilExit(timeout: Duration?) -> Bool {
        if isCurrent { return false }
        return core.waitUntilExit(timeout: timeout)
    }

    /// Suspends the calling task until the thread has ended (after a stop, or after its owner
    /// died), without blocking a thread of the cooperative pool while it waits.
    ///
    /// Returns true once the thread has ended and been joined; false at once if called from work
    /// running on the thread itself (it cannot await its own end). Does not request a stop, and
    /// does not end early when the task is cancelled: pair it with ``stop(waitUntilDone:pending:)``
    /// in a cancellation handler, as `LongThreadService` does.
    /// - Returns: Whether the thread has ended (false only when called on the thread itself).
    /// - Callable from: any task. It runs on its caller's executor (`nonisolated(nonsending)`):
    ///   from an actor pinned to this thread it is on the thread, and returns false at once.
    @discardableResult
    public nonisolated(nonsending) func waitUntilExit() async -> Bool {
        if isCurrent { return false }
        await core.waitUntilExit()
        return true
    }
}
