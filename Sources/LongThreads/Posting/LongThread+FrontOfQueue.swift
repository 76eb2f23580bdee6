extension LongThread {
    /// Queues `work` at the very head of the queue, ahead of every item waiting, like Android's
    /// `postAtFrontOfQueue`: for the rare urgent item (a shutdown notice, a cancellation that must
    /// overtake a backlog).
    ///
    /// Overusing it starves the queue and breaks the order other producers count on.
    ///
    /// - Runs on: this thread, before the next waiting item, in whatever mode the loop runs (an
    ///   urgent item does not wait for a mode). The item running now completes first.
    /// - Order: each call puts its item at the head, so a later one overtakes an earlier one still
    ///   waiting: items posted this way run newest first (posted 3, 2, 1, 0 while the thread is
    ///   busy, they run 0, 1, 2, 3; one posted by an urgent item runs next). All of them run ahead
    ///   of every item queued otherwise (timers and deadline work wait in the run loop, not in
    ///   the queue, and are not ordered with it).
    /// - Queue limit: never refused by a ``QueueLimit`` (it must not wait behind the backlog it
    ///   jumps), but it counts.
    /// - Parameters:
    ///   - label: Names the work in stall reports (``StallMonitor``).
    ///   - work: The work.
    /// - Throws: ``LongThreadError/stopped`` once a stop has begun. A discarding stop drops it
    ///   like any queued item.
    /// - Callable from: any thread, task or actor, including this thread (the work then runs
    ///   before the next item).
    public func performAtFrontOfQueue(label: String? = nil, _ work: @escaping @Sendable () -> Void) throws(LongThreadError) {
        // Made before the lock: `make` captures the poster's context (`ContextCarrier`).
        let item = WorkItem.make(work, label: label)
        try core.enqueue(item, modes: nil, kind: .urgent)
    }
}
