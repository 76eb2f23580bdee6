import CLongThreadsShims

extension LongThread {
    /// A snapshot of a thread's counters.
    public struct Statistics: Sendable, Equatable {
        /// Items waiting: accepted and not yet started, whether still queued or already taken
        /// into the batch the thread is working through (including those it holds back for a mode
        /// it is not running). The item running now is not counted.
        public var pending: Int
        /// How long the oldest waiting item has waited since it was posted; nil when nothing
        /// waits, or when that item's post was not timed: the thread times posts only while it has
        /// an instrument (``LongThread/Options/instrument``) or a ``StallMonitor`` watches it, so
        /// that posting reads no clock otherwise (and, to learn how long to stay awake for a
        /// blocked caller's next request, the one post after a wait for it that came to nothing).
        public var oldestPendingAge: Duration?
        /// The most items that waited in the queue at once.
        public var highWaterMark: Int
        /// Items run so far.
        public var tasksRun: Int
        /// Items dropped unrun by a discarding stop.
        public var discarded: Int
        /// Times the loop woke from sleep since it began counting: from its start when it has an
        /// owner or an instrument, otherwise from the first read of ``LongThread/statistics``
        /// (which returns 0 here). Counting costs a callout on every wake-up, so a thread counts
        /// only once someone asks.
        public var wakeUps: Int
        /// Timer callouts so far.
        public var timersFired: Int
        /// Timers scheduled and not yet ended (fired once, cancelled, or stopped).
        public var pendingTimers: Int
        /// Time spent running queued work.
        public var busyTime: Duration
    }

    /// The thread's counters now.
    ///
    /// - Callable from: any thread, without stopping the thread; costs one lock. `pending` and
    ///   `oldestPendingAge` are current to the item; the loop thread counts the other figures
    ///   without the lock and publishes them at least once per pass of its run loop (a pass runs
    ///   queued work for about a millisecond, or one item when an item takes longer, and may wait
    ///   up to 4 ms more for a blocked caller's next request: the loop's contract in
    ///   <doc:LifeOfAThread>, with its exceptions).
    ///   The first read wakes the loop once, so that it begins counting wake-ups (``Statistics/wakeUps``).
    public var statistics: Statistics {
        let now = CLongThreadsShims_monotonicNanoseconds()
        return core.withLockWaking { state, wake in
            if !state.countsWakeUps {
                state.countsWakeUps = true
                // The loop adds its wake-up observer at its next drain (which the wake-up runs).
                wake.forPass(&state)
            }
            let inBatch = core.batchWaiting.load(ordering: .relaxed)
            let batchOldest = inBatch > 0 ? core.batchOldestPostedAt.load(ordering: .relaxed) : 0
            let oldest = batchOldest != 0 ? batchOldest : state.queue.entries.first?.postedAt ?? 0
            return Statistics(
                pending: state.queue.count + inBatch,
                oldestPendingAge: oldest == 0 ? nil : .nanoseconds(now > oldest ? now - oldest : 0),
                highWaterMark: state.queue.highWaterMark,
                tasksRun: state.counts.tasksRun,
                discarded: state.counts.discarded,
                wakeUps: state.counts.wakeUps,
                timersFired: state.counts.timersFired,
                pendingTimers: state.timers.count,
                busyTime: .nanoseconds(state.counts.busyNanoseconds)
            )
        }
    }
}
