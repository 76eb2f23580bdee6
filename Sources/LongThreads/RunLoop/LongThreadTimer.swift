import Foundation

/// A timer on a LongThread's run loop: delayed work (``LongThread/perform(after:modes:label:group:_:)``) or a
/// repeating callback (``LongThread/schedule(every:initialDelay:tolerance:modes:_:)``).
///
/// Delayed work's handle is a timer and deadline work's (``LongThread/perform(at:modes:label:group:_:)``)
/// a ``LongThread/QueuedWork``: both answer ``cancel()`` alike (true: it will not run), and a
/// ``LongThread/WorkGroup`` holds either. Delayed work kept this type, as Foundation's `Timer`
/// serves both a date and an interval: code that stores the handle as a timer, or awaits
/// ``cancelAndWait()``, keeps working.
///
/// Not Foundation's `Timer` (which never frees its closure on Linux), nor a CF timer each: a
/// thread keeps its timers in a heap by deadline under one CF timer, so scheduling and cancelling
/// cost O(log n) in the timers pending on the thread.
/// - Order: timers due at the same instant fire in the order they were scheduled.
/// - Nested runs: the thread's timers run from a version-0 source, so, unlike a CF timer, one
///   firing counts as a handled source: it ends a run that returns after one
///   (`RunLoop.run(mode:before:)`, `CFRunLoopRunInMode` with `returnAfterSourceHandled`), and a
///   cancelled earliest timer may end one such run without firing anything.
/// - Runs on: the thread, in a run-loop pass in one of its modes: while the loop runs another
///   mode (a nested tracking run, say), the timer waits, as a scroll view's default-mode timer does.
/// - Missed fire times: skipped, not bunched. A repeating timer whose callback ran long fires next
///   on its original grid, at the first grid point after now.
/// - Tolerance: kept and reported, not applied: the thread fires each timer at its exact deadline.
/// - Ends: by ``cancel()`` (any thread), after a one-shot timer fired, or when its thread begins
///   stopping; in every case its closure is released, and a caller awaiting
///   ``LongThread/run(after:modes:_:)`` is told ``LongThreadError/discarded``.
/// - Lifetime: the thread keeps the timer; dropping the handle does not end it (the same rule as
///   for ``RunLoopObserver`` and ``DescriptorSource``).
public final class LongThreadTimer: @unchecked Sendable {
    enum Work {
        case once(WorkItem)
        case repeating(@Sendable (LongThreadTimer) -> Void)
    }

    /// What the timer still has to do, and whether its work or callback runs now, with who waits
    /// for it to return (`cancel(then:)`): one lock, where a fire and a cancel decide against
    /// each other.
    private struct State {
        /// Its work or callback; nil once it can fire no more (cancelled, fired once, stopping).
        var work: Work?
        var running = false
        var notices: [@Sendable () -> Void] = []
    }

    // MARK: Immutable
    /// The interval of a repeating timer; nil for a one-shot timer.
    public let interval: Duration?
    /// The tolerance asked for; not applied (see the type's documentation).
    public let tolerance: Duration
    /// The work of delayed work posted with a group: what the group holds (`WorkGroup.contains`).
    let groupedWork: LongThread.QueuedWork?
    private weak var core: ThreadCore?

    // MARK: Guarded by its own lock
    private let state: Locked<State>

    // MARK: Guarded by its thread's lock (`ThreadCore.shared`)
    /// Where the thread's `TimerSchedule` keeps it (a heap index, or a marker).
    var scheduleSlot = TimerSchedule.nowhere

    init(core: ThreadCore, work: Work, interval: Duration?, tolerance: Duration) {
        self.core = core
        self.interval = interval
        self.tolerance = tolerance
        if case .once(.waiting(let item as LongThread.QueuedWork)) = work {
            groupedWork = item
        } else {
            groupedWork = nil
        }
        // A repeating callback runs in the context of whoever scheduled it, every time (a one-shot
        // timer's `WorkItem` captured it when it was made: `ContextCarrier`).
        if case .repeating(let callback) = work {
            self.state = Locked(State(work: .repeating(ContextCarrier.carry(callback))))
        } else {
            self.state = Locked(State(work: work))
        }
    }

    /// True once the timer can fire no more: cancelled, fired (one-shot), or its thread stopping.
    /// - Callable from: any thread.
    public var isCancelled: Bool {
        state.withLock { $0.work == nil }
    }

    /// Stops the timer and releases its closure. A one-shot timer's work that had not started is
    /// released unrun (its awaiting caller gets ``LongThreadError/discarded``); a callback that is
    /// running completes. Idempotent.
    ///
    /// Answers as ``LongThread/QueuedWork/cancel()`` does, the handle of
    /// ``LongThread/perform(at:modes:label:group:_:)``: NIO's `Scheduled.cancel()` and Chromium's
    /// `PostTask` promise the same "will not run".
    /// - Returns: true when this call ended the timer: a one-shot timer's work will never run; a
    ///   repeating timer's callback starts no more. False when it had ended already (fired once,
    ///   cancelled, its thread stopping); a callback running now still completes either way.
    /// - Callable from: any thread, including the timer's own callback.
    @discardableResult
    public func cancel() -> Bool {
        let (ended, work) = endReturningWork()
        work?.discard()
        return ended
    }

    /// Stops the timer, then calls `notice` once no callback of it runs or will run: at once, on
    /// the caller's thread, when none runs now; otherwise on the timer's thread right after the
    /// running callback returns. The safe moment to tear down what the callback uses (NIO's
    /// `RepeatedTask.cancel(promise:)`).
    ///
    /// - Called from the timer's own callback: `notice` comes after that callback returns.
    /// - A thread that stops meanwhile still gives the notice when the callback returns; a timer
    ///   already ended gives it at once.
    /// - Callable from: any thread, including the timer's own callback.
    /// - Parameter notice: Called exactly once. Keep it short when it runs on the timer's thread.
    public func cancel(then notice: @escaping @Sendable () -> Void) {
        cancel()
        let now = state.withLock { state -> Bool in
            guard state.running else { return true }
            state.notices.append(notice)
            return false
        }
        if now { notice() }
    }

    /// Stops the timer and returns once no callback of it runs or will run: ``cancel(then:)``
    /// for async code. Suspends the task meanwhile; holds no thread.
    ///
    /// - Callable from: any task or actor, including one running on the timer's thread (the
    ///   callback then returns while the task is suspended).
    public func cancelAndWait() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            cancel { continuation.resume() }
        }
    }

    /// `cancel()`, except that a one-shot timer's work is returned instead of discarded: a stop
    /// releases it with everything else it drops, then tells its waiter (`ThreadCore.tell`).
    func cancelReturningWork() -> WorkItem? {
        endReturningWork().work
    }

    /// Ends the timer; says whether this call ended it, and returns a one-shot timer's work.
    private func endReturningWork() -> (ended: Bool, work: WorkItem?) {
        let work = end()
        core?.timerEnded(self)
        guard case .once(let item) = work else { return (work != nil, nil) }
        return (true, item)
    }


    /// Loop thread: the CF timer fired.
    func fire() {
        let work = state.withLock { state -> Work? in
            guard let work = state.work else { return nil }
            if case .once = work { state.work = nil }
            state.running = true
            return work
        }
        switch work {
        case .once(let item):
            core?.timerFired(self, ended: true)
            item.run()
        case .repeating(let callback):
            core?.timerFired(self, ended: false)
            callback(self)
        case nil:
            return
        }
        let notices = state.withLock { state in
            state.running = false
            defer { state.notices = [] }
            return state.notices
        }
        for notice in notices { notice() }
    }

    private func end() -> Work? {
        state.withLock { state in
            defer { state.work = nil }
            return state.work
        }
    }
}

extension LongThread {
    /// Runs `work` on this thread once `delay` has passed, in a run-loop pass in one of `modes`.
    ///
    /// - Order: by deadline (now plus `delay`) with the thread's other timers and deadline work
    ///   (``perform(at:modes:label:group:_:)``); equal deadlines in the order scheduled. A delay below
    ///   zero is a deadline already passed, ordered as one: `perform(after: .milliseconds(-5))`
    ///   runs before `perform(after: .zero)` posted earlier, if neither has run yet.
    /// - Returns: the timer, to cancel it. Keeping it is optional: the thread keeps the timer
    ///   until it fires, is cancelled, or the thread stops.
    /// - Behind queued work: it fires when the loop next returns to its run loop, after at most
    ///   about a millisecond of work or the item running when it fell due, before the rest of the
    ///   work (<doc:LifeOfAThread>).
    /// - Group: with a `group`, ``WorkGroup/cancelAll()`` takes the work back until it starts,
    ///   releasing the timer and the closure at once, like Android's
    ///   `removeCallbacksAndMessages(token)` for delayed messages; the work counts in the group's
    ///   ``WorkGroup/count`` until it ends. Cancelling the timer takes it out of the group.
    /// - After stop: throws ``LongThreadError/stopped``; a stop cancels timers not yet fired.
    /// - Callable from: any thread, task or actor.
    /// - Parameters:
    ///   - delay: How long to wait.
    ///   - modes: The run-loop modes the work may run in.
    ///   - label: Names the work for a ``ContextPropagator`` (a tracing span's name, say), as for
    ///     ``perform(at:modes:label:group:_:)``; the timer does not keep it.
    ///   - group: A group to take the work back with, among others.
    ///   - work: The work.
    @discardableResult
    public func perform(
        after delay: Duration,
        modes: [RunLoop.Mode] = [.default],
        label: String? = nil,
        group: WorkGroup? = nil,
        _ work: @escaping @Sendable () -> Void
    ) throws(LongThreadError) -> LongThreadTimer {
        guard let group else {
            let timer = LongThreadTimer(core: core, work: .once(.make(work, label: label)), interval: nil, tolerance: .zero)
            try core.schedule(timer, after: delay, modes: modes)
            return timer
        }
        // In a group, the work is a handle the group can cancel, and a cancel takes the timer too.
        let item = QueuedWork(work, label: label, group: group, waitable: false, withdrawable: true)
        let timer = LongThreadTimer(core: core, work: .once(.waiting(item)), interval: nil, tolerance: .zero)
        try item.post { () throws(LongThreadError) in try core.schedule(timer, after: delay, modes: modes) }
        item.withdrawal?.hold { [weak timer] in timer?.cancel() }
        return timer
    }

    /// Calls `callback` on this thread every `interval`, first after `initialDelay` (one
    /// `interval` when nil), until the timer is cancelled (the callback gets it, to cancel itself)
    /// or the thread stops: NIO's `scheduleRepeatedTask(initialDelay:delay:)`, Foundation's
    /// `Timer(fire:interval:repeats:block:)`.
    ///
    /// - Grid: the fire times are the first one plus whole intervals; missed ones are skipped,
    ///   not bunched. An `initialDelay` of zero or below fires at the thread's next chance.
    /// - `tolerance` is recorded but not applied (see ``LongThreadTimer``).
    /// - Throws: ``LongThreadError/invalidInterval(_:)`` for an `interval` of zero or below (a
    ///   timer that would fire without end), nothing scheduled; ``LongThreadError/stopped`` after
    ///   a stop began.
    /// - Callable from: any thread, task or actor.
    @discardableResult
    public func schedule(
        every interval: Duration,
        initialDelay: Duration? = nil,
        tolerance: Duration = .zero,
        modes: [RunLoop.Mode] = [.default],
        _ callback: @escaping @Sendable (LongThreadTimer) -> Void
    ) throws(LongThreadError) -> LongThreadTimer {
        guard interval > .zero else { throw .invalidInterval(interval) }
        let timer = LongThreadTimer(core: core, work: .repeating(callback), interval: interval, tolerance: tolerance)
        try core.schedule(timer, after: initialDelay ?? interval, modes: modes)
        return timer
    }

    /// Runs `work` on this thread once `delay` has passed and returns its value.
    ///
    /// - Order: as ``perform(after:modes:label:group:_:)``.
    /// - Cancellation: cancelling the awaiting task before the work started skips it and throws
    ///   `CancellationError` at once.
    /// - After stop: throws ``LongThreadError/stopped``; a stop before the timer fired throws
    ///   ``LongThreadError/discarded``.
    /// - Callable from: any task or actor.
    public func run<T: Sendable>(
        after delay: Duration,
        modes: [RunLoop.Mode] = [.default],
        _ work: @escaping @Sendable () throws -> T
    ) async throws -> T {
        let request = AsyncWork(work)
        let timer = LongThreadTimer(core: core, work: .once(.waiting(request)), interval: nil, tolerance: .zero)
        // Cancelled: the waiter hears CancellationError first, then the timer and its closure go
        // at once instead of waiting in the loop until the deadline.
        return try await request.value(posting: { (_) throws(LongThreadError) in
            try core.schedule(timer, after: delay, modes: modes)
        }, onCancel: { timer.cancel() })
    }
}
