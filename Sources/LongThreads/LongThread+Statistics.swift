extension LongThread {
    /// A snapshot of a thread's counters.
    public struct Statistics: Sendable, Equatable {
        /// Items waiting: accepted and not yet taken by the thread, plus those it holds back for a
        /// mode it is not running. Items the thread took in its current batch are not counted.
        public var pending: Int
        /// The most items that waited in the queue at once.
        public var highWaterMark: Int
        /// Items run so far.
        public var tasksRun: Int
        /// Items dropped unrun by a discarding stop.
        public var discarded: Int
        /// Times the loop woke from sleep.
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
    /// - Callable from: any thread, without stopping the thread; costs one lock. The loop thread
    ///   counts without the lock and publishes at each refill of its batch, so while one long batch
    ///   runs the figures may lag by that batch.
    public var statistics: Statistics {
        core.shared.withLock { state in
            Statistics(
                pending: state.queue.count + state.batchPending,
                highWaterMark: state.queue.highWaterMark,
                tasksRun: state.tasksRun,
                discarded: state.discarded,
                wakeUps: state.wakeUps,
                timersFired: state.timersFired,
                pendingTimers: state.timers.count,
                busyTime: .nanoseconds(state.busyNanoseconds)
            )
        }
    }
}
