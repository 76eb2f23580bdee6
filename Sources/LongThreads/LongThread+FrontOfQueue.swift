extension LongThread {
    /// Queues `work` ahead of every item waiting, like Android's `postAtFrontOfQueue`: for the rare
    /// urgent item (a shutdown notice, a cancellation that must overtake a backlog).
    ///
    /// Overusing it starves the queue and breaks the order other producers count on.
    ///
    /// - Runs on: this thread, before the next waiting item, in whatever mode the loop runs (an
    ///   urgent item does not wait for a mode). The item running now completes first.
    /// - Order: FIFO among the items posted this way; ahead of everything posted otherwise.
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
        try core.enqueue(item, modes: nil, atFront: true)
    }
}
