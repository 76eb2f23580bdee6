import Foundation

extension LongThread {
    /// Work queued on a thread that can be taken back until it starts: returned by
    /// ``LongThread/submit(modes:label:group:_:)`` and ``LongThread/perform(at:modes:label:group:_:)``.
    ///
    /// The counterpart of Android's `Handler.removeCallbacks`, Foundation's
    /// `cancelPreviousPerformRequests` and NIO's `Scheduled.cancel()`. The work ends exactly
    /// once, in one of three ways: it runs, it is cancelled before it started, or a discarding
    /// stop drops it. A cancel racing the thread taking the work is decided under the item's lock:
    /// ``cancel()`` returns true exactly when the work will never run.
    ///
    /// - Threading: every member is callable from any thread, including the thread itself and the
    ///   work's own closure (which is then running: `cancel()` returns false).
    public final class QueuedWork: WaitingWork, @unchecked Sendable {
        /// How the work ended, or whether it is still waiting or running.
        public enum State: Sendable, Equatable {
            /// Accepted and not started: ``QueuedWork/cancel()`` can still take it back.
            case waiting
            /// Running on the thread now.
            case running
            /// It ran to the end.
            case finished
            /// Taken back before it started; it never runs.
            case cancelled
            /// Dropped unrun by a discarding stop.
            case discarded
        }

        private enum Phase {
            case waiting(@Sendable () -> Void)
            case ended(State)
        }

        // The closure lives in the phase, so it is released the moment the work is cancelled or
        // discarded, while the queue may still hold this object (the thread passes over it).
        private let phase: Locked<Phase>
        let label: String?
        /// The group it belongs to, if any; the work leaves it when it ends.
        private let group: WorkGroup?
        /// Set once the work ended, for a caller waiting with a timeout.
        private let done: OneShotEvent?
        /// For work that a timer or a deadline bucket holds: a cancel takes it out of there at once.
        let withdrawal: Withdrawal?
        /// Released by a discarding stop (`releaseWork`), not told yet. Only the discarding thread
        /// touches it, between its `releaseWork()` and `discard()` calls.
        private var releasedUntold = false

        init(
            _ work: @escaping @Sendable () -> Void, label: String?, group: WorkGroup?, waitable: Bool,
            withdrawable: Bool = false
        ) {
            // Every way to post builds an item of this kind (or another that does the same), so
            // the poster's context is captured here, once, whatever the spelling (`ContextCarrier`).
            self.phase = Locked(.waiting(ContextCarrier.carry(work, label: label)))
            self.label = label
            self.group = group
            self.done = waitable ? OneShotEvent() : nil
            self.withdrawal = withdrawable ? Withdrawal() : nil
        }

        /// Where the work is now. The answer may be stale by the time it is read, except once
        /// it is `.finished`, `.cancelled` or `.discarded`, which are final.
        public var state: State {
            phase.withLock { phase in
                switch phase {
                case .waiting: .waiting
                case .ended(let state): state
                }
            }
        }

        /// Takes the work back if it has not started; its closure is released before this returns,
        /// and so is the timer of delayed work (``LongThread/perform(at:modes:label:group:_:)``,
        /// or ``LongThread/perform(after:modes:label:group:_:)`` with a group) when no other work waits on it.
        ///
        /// - Returns: true when the work was removed and will never run; false when it has started
        ///   (it completes), ended, or was already cancelled.
        @discardableResult
        public func cancel() -> Bool {
            guard end(as: .cancelled) else { return false }
            withdrawal?.withdraw()
            return true
        }

        // MARK: - Internal

        /// Loop thread only: runs the work unless it was taken back.
        func run() {
            let work = phase.withLock { phase -> (@Sendable () -> Void)? in
                guard case .waiting(let work) = phase else { return nil }
                phase = .ended(.running)
                return work
            }
            guard let work else { return }
            work()
            phase.withLock { $0 = .ended(.finished) }
            ended()
        }

        func discard() {
            if releasedUntold {
                releasedUntold = false
                ended()
            } else {
                _ = end(as: .discarded)
            }
        }

        func releaseWork() {
            // Never unsets the flag: a second release (which finds the work ended) must not lose
            // the tell that the first one owes.
            if release(as: .discarded) { releasedUntold = true }
        }

        /// Joins its group and queues itself on `core`, waiting for room if the thread's queue
        /// limit says so; leaves the group again if the thread refuses it.
        func post(on core: ThreadCore, modes: [RunLoop.Mode]) throws(LongThreadError) {
            try post { () throws(LongThreadError) in
                try core.postWaitingForRoom { () throws(LongThreadError) in try core.enqueue(.waiting(self), modes: modes) }
            }
        }

        /// Joins its group and waits on `core` for `deadline`; a cancel takes it out of its
        /// deadline's bucket, and the bucket's timer goes with its last item.
        func post(on core: ThreadCore, at deadline: ContinuousClock.Instant, modes: [RunLoop.Mode]) throws(LongThreadError) {
            try post { () throws(LongThreadError) in
                let bucket = try core.enqueue(self, at: deadline, modes: modes)
                withdrawal?.hold { [weak self, weak bucket] in
                    if let self, let bucket { bucket.withdraw(self) }
                }
            }
        }

        /// Joins its group and posts itself with `enqueue`; leaves the group again if that throws.
        func post(_ enqueue: () throws(LongThreadError) -> Void) throws(LongThreadError) {
            group?.insert(self)
            do throws(LongThreadError) {
                try enqueue()
            } catch {
                group?.remove(self)
                throw error
            }
        }

        /// Blocks until the work ended or `timeout` passed (nil: for ever). A timeout takes the work
        /// back if it has not started. Not on the thread (it would wait on itself).
        /// - Throws: `.timedOut`, `.discarded`, `.cancelled`.
        /// On a virtual `clock` (LongThreadsTestKit), the timeout passes when the test advances it.
        func waitForOutcome(timeout: Duration?, clock: VirtualClock?) throws(LongThreadError) {
            let ended = if let clock, let timeout, let done { clock.wait(for: done, timeout: timeout) } else { done?.wait(timeout: timeout) }
            if ended == false, cancel() { throw .timedOut }
            switch state {
            case .finished: return
            case .discarded: throw .discarded
            case .cancelled: throw .cancelled
            case .waiting, .running: throw .timedOut // started: it completes, its result is dropped
            }
        }

        /// Ends the work unrun if it is still waiting; returns whether it did.
        private func end(as state: State) -> Bool {
            guard release(as: state) else { return false }
            ended()
            return true
        }

        /// Ends the work unrun if it is still waiting, telling nobody yet; returns whether it did.
        private func release(as state: State) -> Bool {
            let work = phase.withLock { phase -> (@Sendable () -> Void)? in
                guard case .waiting(let work) = phase else { return nil }
                phase = .ended(state)
                return work
            }
            return work != nil // the closure's last reference goes here, outside the lock
        }

        private func ended() {
            group?.remove(self)
            done?.signal()
        }
    }

    /// A set of queued work that can be taken back at once, like Android's
    /// `removeCallbacksAndMessages(token)`: give the same group to several
    /// ``LongThread/submit(modes:label:group:_:)``, ``LongThread/perform(after:modes:label:group:_:)``,
    /// ``LongThread/perform(at:modes:label:group:_:)``,
    /// ``LongThread/perform(waitUntilDone:timeout:modes:label:group:_:)`` or
    /// ``LongThread/sync(timeout:modes:label:group:_:)`` calls, on one thread or several, then
    /// ``cancelAll()``. Delayed work taken back releases its timer at once too.
    ///
    /// The group holds only work that has not ended: an item leaves it when it runs, is
    /// cancelled or is discarded, so a long-lived group does not grow.
    ///
    /// - Threading: callable from any thread.
    public final class WorkGroup: Sendable {
        private let members = Locked<[ObjectIdentifier: QueuedWork]>([:])

        /// An empty group.
        public init() {}

        /// Takes back every item of the group that has not started; items running now complete,
        /// and stay in the group (and in ``count``) until they end. Work submitted to the group
        /// after this call began is not affected.
        ///
        /// - Returns: how many items were removed (they will never run).
        @discardableResult
        public func cancelAll() -> Int {
            // Each item leaves the group as it ends (`QueuedWork.ended`): a cancelled one here,
            // a running one when it returns. Emptying the list at once lost the running ones.
            let members = members.withLock { Array($0.values) }
            return members.reduce(0) { $0 + ($1.cancel() ? 1 : 0) }
        }

        /// How many items of the group have not ended (waiting or running), a running one
        /// included after ``cancelAll()``.
        ///
        /// A snapshot, as are ``isEmpty`` and `contains(_:)`: another
        /// thread may post into the group, and the thread end an item, as soon as it is read.
        public var count: Int { members.withLock { $0.count } }

        /// Whether no item of the group is waiting or running (Android's `hasMessages` for a
        /// token, negated). A snapshot.
        public var isEmpty: Bool { members.withLock { $0.isEmpty } }

        /// Whether `item` is in the group: posted with it and not ended (waiting or running), as
        /// Android's `Handler.hasCallbacks(r)` answers. A snapshot: once `item` has ended (it ran,
        /// was cancelled or discarded) the answer stays false.
        public func contains(_ item: QueuedWork) -> Bool {
            members.withLock { $0[ObjectIdentifier(item)] != nil }
        }

        /// Whether the delayed work of `timer` (``LongThread/perform(after:modes:label:group:_:)``
        /// with this group) is in the group: not ended, waiting for its deadline or running. False
        /// for a timer posted without a group, or a repeating one. A snapshot.
        public func contains(_ timer: LongThreadTimer) -> Bool {
            guard let item = timer.groupedWork else { return false }
            return contains(item)
        }

        func insert(_ work: QueuedWork) {
            members.withLock { $0[ObjectIdentifier(work)] = work }
        }

        func remove(_ work: QueuedWork) {
            _ = members.withLock { $0.removeValue(forKey: ObjectIdentifier(work)) }
        }
    }

    /// Queues `work` like ``perform(waitUntilDone:modes:label:_:)`` and returns a handle that can
    /// take it back until it starts.
    ///
    /// - Runs on: this thread, in a run-loop pass in one of `modes`, in order with the other work
    ///   of the same producer.
    /// - Cost: one allocation for the handle (the plain `perform` allocates nothing beyond the
    ///   closure's context); a `group` adds a lock when the work is queued and when it ends.
    /// - Queue limit: as `perform` (see ``QueueLimit``).
    /// - Parameters:
    ///   - modes: The run-loop modes the work may run in.
    ///   - label: Names the work in stall reports (``StallMonitor``).
    ///   - group: A group to take the work back with, among others (``WorkGroup/cancelAll()``).
    ///   - work: The work.
    /// - Returns: the handle; keeping it is optional.
    /// - Throws: ``LongThreadError/stopped``, ``LongThreadError/queueFull``,
    ///   ``LongThreadError/noModes``, ``LongThreadError/tooManyModes(limit:)``.
    /// - Callable from: any thread, task or actor, including this thread (the work is then queued).
    @discardableResult
    public func submit(
        modes: [RunLoop.Mode] = [.default],
        label: String? = nil,
        group: WorkGroup? = nil,
        _ work: @escaping @Sendable () -> Void
    ) throws(LongThreadError) -> QueuedWork {
        let item = QueuedWork(work, label: label, group: group, waitable: false)
        try item.post(on: core, modes: modes)
        return item
    }
}
