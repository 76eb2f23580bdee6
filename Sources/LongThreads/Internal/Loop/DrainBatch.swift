/// The entries the loop thread took from the queue and has not run yet: the drain works through
/// them in order without the producers' lock.
///
/// Entries that may not run in the current mode stay here in order (taken ones are marked, not
/// removed), and a run nested inside a task continues this batch before newer work. Part of
/// `LoopState` (`batch`), kept inline: loop thread only, read per item. No method runs an item:
/// an item may run the loop nested, and the nested drain works on this same batch.
struct DrainBatch: ~Copyable {
    /// The entries, oldest first; taken ones are left in place until `compact`.
    var entries: [QueueEntry] = []
    /// The first entry not yet taken.
    private(set) var head = 0
    /// Entries not yet taken.
    private(set) var untaken = 0
    /// Drains on the stack (a task may run the loop nested): each holds an index into `entries`,
    /// so only the outermost may compact them.
    var drainDepth = 0

    /// When the oldest entry not yet taken was posted; 0 when there is none (or posts are not timed).
    var oldestPostedAt: UInt64 { head < entries.count ? entries[head].postedAt : 0 }

    /// The oldest entry not yet taken, if any.
    var firstUntaken: QueueEntry? { entries[head...].first { !$0.isTaken } }

    /// Whether an entry not yet taken may run in one of the modes of `mask`.
    func hasEntry(eligibleIn mask: ModeTable.Mask) -> Bool {
        // Taken entries have no modes left, so they never match.
        entries[head...].contains { $0.modes & mask != 0 }
    }

    /// Takes the entry at `index` out for the caller to run (its modes were checked).
    @inline(__always)
    mutating func take(at index: Int) -> WorkItem {
        let item = entries[index].take()
        if index == head { head += 1 }
        if head < entries.count, entries[head].isTaken { advanceHead() }
        untaken -= 1
        return item
    }

    /// A refill appended entries to `entries`, which held `before`.
    @inline(__always)
    mutating func grew(from before: Int) {
        untaken += entries.count - before
    }

    /// Drops taken entries when no outer drain holds an index into `entries`; `index` (the caller's
    /// position) moves with them.
    mutating func compact(_ index: inout Int) {
        guard drainDepth == 1 else { return }
        if head == entries.count {
            if entries.count <= 4 {
                // A round trip's batch: `removeLast` is inlined, where `removeAll`'s generic
                // range replacement cost ~100 instructions per drain.
                while !entries.isEmpty { entries.removeLast() }
            } else {
                entries.removeAll(keepingCapacity: true)
            }
            head = 0
            index = 0
        } else if entries.count >= 1024, head > entries.count / 2 || entries.count > 4096 {
            // Entries waiting for another mode stay; taken slots between them go.
            entries.removeAll { $0.isTaken }
            head = 0
            index = entries.count
        }
    }

    /// Empties the batch; returns what it held (taken entries included), for the caller to drop.
    mutating func removeAll() -> [QueueEntry] {
        var dropped: [QueueEntry] = []
        swap(&dropped, &entries)
        head = 0
        untaken = 0
        return dropped
    }

    @inline(__always)
    private mutating func advanceHead() {
        while head < entries.count, entries[head].isTaken { head += 1 }
    }
}
