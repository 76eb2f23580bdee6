/// The queue producers append to, guarded by the thread's lock (`ThreadCore.shared`).
///
/// One wake-up per burst: a producer wakes the loop (`RunLoopEngine.wake`) only when it
/// finds the queue empty and the loop thread not already draining it. While the loop drains, it
/// looks at the queue again before it sleeps, so producers skip the wake-up's system call
/// (`CFRunLoopWakeUp`: about 340 ns even when the loop is busy). A loop
/// parked for a caller's next request (`ThreadCore.park`) is woken by ringing its park bell instead.
struct WorkQueue {
    private(set) var entries: [QueueEntry] = []
    /// Entries posted at the front of the queue (`performAtFrontOfQueue`), oldest first. Each post
    /// goes to the very head of the queue, so the loop takes the newest first, one at a time
    /// (`takeNewestUrgent`), before the next item of its batch.
    private(set) var urgent: [QueueEntry] = []
    /// True while the loop thread is draining and will look at `entries` again before it sleeps.
    private(set) var consumerActive = false
    /// True while the loop thread sleeps on its park bell for a caller's next post
    /// (`ThreadCore.park`): the producer that must wake the loop rings that bell instead.
    private(set) var consumerParked = false
    /// The most entries waiting at once.
    private(set) var highWaterMark = 0
    /// How many of `entries` must be told when discarded (a waiter, or a job to hand on): when
    /// none, a discard frees them without looking at each.
    private var entriesToTell = 0

    var count: Int { entries.count + urgent.count }
    var isEmpty: Bool { entries.isEmpty && urgent.isEmpty }

    /// Appends `entry`; returns true when the caller must wake the loop.
    @inline(__always)
    mutating func append(_ entry: consuming QueueEntry) -> Bool {
        // `entries` alone: with urgent entries waiting, the loop was already woken for them (at
        // worst this wakes it once more), and the post path skips a load.
        let mustWake = entries.isEmpty && !consumerActive
        if entry.item.mustBeTold { entriesToTell += 1 }
        entries.append(entry)
        if entries.count > highWaterMark { highWaterMark = entries.count }
        return mustWake
    }

    /// Appends `entry` to the urgent entries; returns true when the caller must wake the loop.
    mutating func appendUrgent(_ entry: consuming QueueEntry) -> Bool {
        let mustWake = isEmpty && !consumerActive
        if entry.item.mustBeTold { entriesToTell += 1 }
        urgent.append(entry)
        return mustWake
    }

    /// Loop thread: takes the head of the queue, the urgent entry posted last.
    mutating func takeNewestUrgent() -> QueueEntry? {
        urgent.popLast()
    }

    /// Loop thread: moves every entry to the end of `batch`. Returns false when there was nothing,
    /// and then marks the consumer inactive (so the next producer wakes the loop) unless it
    /// `staysActive`: the loop lingers and looks again soon (`ThreadCore.linger`); or marks it
    /// parked when it `parks` (`ThreadCore.park`).
    mutating func moveAll(to batch: inout [QueueEntry], staysActive: Bool = false, parks: Bool = false) -> Bool {
        consumerParked = false
        if isEmpty {
            consumerActive = staysActive
            consumerParked = parks && !staysActive
            return false
        }
        consumerActive = true
        entriesToTell = 0
        if !urgent.isEmpty {
            // Rare: urgent entries the loop did not pick up between two items go first, newest first.
            batch.append(contentsOf: urgent.reversed())
            urgent.removeAll()
        }
        if batch.isEmpty {
            // Both arrays keep their storage: in steady state a batch allocates nothing.
            swap(&entries, &batch)
        } else {
            batch.append(contentsOf: entries)
            entries.removeAll(keepingCapacity: true)
        }
        return true
    }

    /// Whoever must wake the loop (`Wake`, its only caller): whether it is parked, and then marks
    /// it no longer so (the bell rings once).
    mutating func unpark() -> Bool {
        defer { consumerParked = false }
        return consumerParked
    }

    /// Loop thread, when a run of the loop begins (possibly nested inside a task): the draining
    /// that was in progress is suspended, so producers must wake the loop again.
    mutating func consumerSuspended() {
        consumerActive = false
    }

    /// Takes every entry out but the jobs, for a discarding stop: a job stays queued, in order,
    /// since nobody could be told it was dropped (its task would hang); the thread runs it before
    /// it ends (`ThreadCore.runRemainingJobs`). `mustTell` as for `removeAll()`.
    mutating func removeAllButJobs() -> (entries: [QueueEntry], mustTell: Bool) {
        let (all, mustTell) = removeAll()
        // No entry to tell: no job among them either.
        guard mustTell else { return (all, false) }
        var dropped: [QueueEntry] = []
        dropped.reserveCapacity(all.count)
        var droppedMustTell = false
        for entry in all {
            if entry.item.isJob {
                entries.append(entry)
                entriesToTell += 1
            } else {
                droppedMustTell = droppedMustTell || entry.item.mustBeTold
                dropped.append(entry)
            }
        }
        return (dropped, droppedMustTell)
    }

    /// Loop thread, once the loop has stopped: takes the jobs out, in order, and leaves the rest.
    mutating func removeJobs() -> [QueueEntry] {
        guard entriesToTell > 0 else { return [] }
        var jobs: [QueueEntry] = []
        var rest: [QueueEntry] = []
        entriesToTell = 0
        for entry in entries {
            if entry.item.isJob {
                jobs.append(entry)
            } else {
                if entry.item.mustBeTold { entriesToTell += 1 }
                rest.append(entry)
            }
        }
        entries = rest
        return jobs
    }

    /// Loop thread: puts `jobs` (older than every queued entry: a discarded batch's) back at the head.
    mutating func putBack(jobs: [QueueEntry]) {
        entries.insert(contentsOf: jobs, at: 0)
        entriesToTell += jobs.count
    }

    /// Takes every entry out, for discarding; `mustTell` is false when no entry has anyone to tell.
    mutating func removeAll() -> (entries: [QueueEntry], mustTell: Bool) {
        defer {
            entries = []
            urgent = []
            entriesToTell = 0
        }
        // Without urgent entries (nearly always) the array is handed over as is: no copy.
        return (urgent.isEmpty ? entries : urgent.reversed() + entries, entriesToTell > 0)
    }
}
