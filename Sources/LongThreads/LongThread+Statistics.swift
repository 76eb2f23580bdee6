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
    }

    /// The thread's counters now.
    ///
    /// - Callable from: any thread, without stopping the thread; costs one lock. The loop thread
    ///   publishes what it ran once per batch, so while a long batch runs the figures may lag.
    public var statistics: Statistics {
        core.shared.withLock { state in
            Statistics(
                pending: state.queue.count + state.batchPending,
                highWaterMark: state.queue.highWaterMark,
                tasksRun: state.tasksRun
            )
        }
    }
}
