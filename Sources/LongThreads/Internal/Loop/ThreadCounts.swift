/// What a thread has done so far, the counting part of `LongThread.Statistics` (the rest, what
/// waits now, comes from the queue and the timers when statistics are read).
///
/// One type in two places: the loop thread counts without the lock into `LoopState.unpublished`,
/// and moves that into `SharedState.counts`, where readers find it, under the lock it takes anyway
/// at each refill and at its exit (`ThreadCore.publishCounters`). So the hot path pays no lock and
/// no atomic per item, and `statistics` is current to the pass.
struct ThreadCounts {
    /// Items run.
    var tasksRun = 0
    /// Times the loop woke from sleep, once it counts them (`SharedState.countsWakeUps`).
    var wakeUps = 0
    /// Timer callouts.
    var timersFired = 0
    /// Nanoseconds spent running queued work, waits excluded.
    var busyNanoseconds: UInt64 = 0
    /// Items dropped unrun: by a discarding stop, from the queue or from the loop's batch.
    var discarded = 0

    /// Adds `other` to these counts and zeroes it: the loop's unpublished share, published.
    mutating func take(_ other: inout ThreadCounts) {
        tasksRun += other.tasksRun
        wakeUps += other.wakeUps
        timersFired += other.timersFired
        busyNanoseconds += other.busyNanoseconds
        discarded += other.discarded
        other = ThreadCounts()
    }
}
