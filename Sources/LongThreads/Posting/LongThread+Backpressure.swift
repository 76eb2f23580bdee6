extension LongThread {
    /// A bound on the work waiting for a thread, with two watermarks, as NIO's
    /// `NIOAsyncSequenceProducerBackPressureStrategies.HighLowWatermark`: the post that brings the
    /// backlog to ``highWatermark`` makes the queue full, and it stays full until the backlog is
    /// below ``lowWatermark`` (not at it: with watermarks 100 and 50 it opens at 49), so producers
    /// resume in bursts instead of one item at a time.
    ///
    /// Set it in ``Options/queueLimit``. When the queue is full:
    /// - `perform` (with or without `waitUntilDone`, and ``submit(modes:label:group:_:)``) throws
    ///   ``LongThreadError/queueFull`` under ``WhenFull/throwError``, or blocks the caller until
    ///   the backlog is below the low watermark under ``WhenFull/block``;
    /// - `sync` does the same as `perform`;
    /// - `run` suspends the calling task until there is room (it blocks no thread, and throws
    ///   `CancellationError` if the task is cancelled meanwhile);
    /// - called on the thread itself, a post that would wait throws ``LongThreadError/queueFull``
    ///   instead: the thread cannot wait for room only it can make.
    ///
    /// A stop wakes every producer waiting for room: it then gets ``LongThreadError/stopped``.
    ///
    /// What counts: every item accepted and not yet finished (run, or passed over after a
    /// ``QueuedWork/cancel()``), including items the thread holds for a mode it is not running.
    /// Swift concurrency jobs (actors pinned to the thread, tasks preferring it) and
    /// ``performAtFrontOfQueue(label:_:)`` items are never refused (the runtime has nobody to throw
    /// to, and an urgent item must not wait behind the backlog it jumps), but they count. Timers,
    /// ``perform(at:modes:label:group:_:)`` and ``run(at:modes:_:)`` work waits in the run loop, not in the
    /// queue, and does not count. The thread publishes what it finished at least once per pass of
    /// its loop (about every millisecond while busy), so the backlog it sees may briefly be
    /// higher than the truth, never lower: memory stays bounded by the high watermark.
    public struct QueueLimit: Sendable, Equatable {
        /// What `perform` and `sync` do when the queue is full.
        public enum WhenFull: Sendable, Equatable {
            /// Throw ``LongThreadError/queueFull`` at once.
            case throwError
            /// Block the calling thread until the backlog is below the low watermark (or a
            /// stop begins, then throw ``LongThreadError/stopped``). From a task, post with
            /// `run` instead: it suspends, where a blocked `perform` would hold a cooperative thread.
            case block
        }

        /// The backlog at which the queue becomes full (at least 1).
        public var highWatermark: Int
        /// A full queue accepts work again once the backlog is below this (1 ... `highWatermark`;
        /// 1: once the queue is empty; `highWatermark`: as soon as one item finished).
        public var lowWatermark: Int
        /// What `perform` and `sync` do when the queue is full.
        public var whenFull: WhenFull

        /// A limit of `highWatermark` items that opens again below `lowWatermark` (by default half
        /// the high one). Out-of-range values are clamped: `highWatermark` to at least 1,
        /// `lowWatermark` into `1 ... highWatermark` (NIO's rule with a low watermark of 0 would
        /// never open the queue again; equal watermarks are allowed, as in NIO).
        public init(highWatermark: Int, lowWatermark: Int? = nil, whenFull: WhenFull = .throwError) {
            let high = max(1, highWatermark)
            self.highWatermark = high
            self.lowWatermark = min(max(1, lowWatermark ?? high / 2), high)
            self.whenFull = whenFull
        }
    }
}
