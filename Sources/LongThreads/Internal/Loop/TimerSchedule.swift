/// A thread's pending `LongThreadTimer`s, by deadline: what its one CF timer is armed for.
///
/// Not a CF timer per timer: CF keeps a mode's timers in one sorted array that it searches
/// linearly to remove one, so at 100,000 pending timers a cancel costs ~70 µs. Here
/// they wait in a binary heap (each timer knows its slot, so a cancel is O(log n) too), and the
/// thread's engine arms one CF timer for the earliest deadline.
///
/// A deadline that passed moves its timer to `due`, in deadline order, until a pass of
/// the loop in one of its modes runs it: while the loop runs another mode (a nested tracking run),
/// a timer of the default mode waits, as a CF timer in that mode would. `due` is a queue with a
/// head, and a timer taken or cancelled out of order leaves a hole, so that a hundred thousand
/// timers falling due together cost O(n), not O(n²).
///
/// Guarded by the thread's lock (`ThreadCore.shared`); so is each timer's `scheduleSlot`.
struct TimerSchedule {
    struct Entry {
        /// Monotonic nanoseconds (`CLongThreadsShims_monotonicNanoseconds`).
        var deadline: UInt64
        /// Order of scheduling: timers with the same deadline fire in the order they were scheduled.
        var sequence: UInt64
        var modes: ModeTable.Mask
        var timer: LongThreadTimer
    }

    /// `LongThreadTimer.scheduleSlot` of a timer in neither the heap nor `due`. A heap index is
    /// 0 or more; a timer in `due` at index i has `dueSlotBase - i`.
    static let nowhere = -1
    private static let dueSlotBase = -2

    /// The heap: `pending[0]` has the earliest deadline; each timer's `scheduleSlot` is its index.
    private var pending: [Entry] = []
    /// Timers whose deadline passed, waiting for a pass in one of their modes; nil: a hole.
    private var due: [Entry?] = []
    /// The first slot of `due` that may hold a timer.
    private var dueHead = 0
    /// Timers in `due` (holes not counted).
    private(set) var dueCount = 0
    private var nextSequence: UInt64 = 0
    /// The deadline the engine's CF timer is armed for; `.max` when it is not armed.
    var armedFor: UInt64 = .max

    var isEmpty: Bool { pending.isEmpty && dueCount == 0 }

    /// The earliest deadline still pending (not yet due), if any.
    var earliestDeadline: UInt64? { pending.first?.deadline }

    /// Adds `timer`, which must be in neither the heap nor `due`.
    mutating func insert(_ timer: LongThreadTimer, deadline: UInt64, modes: ModeTable.Mask) {
        nextSequence &+= 1
        pending.append(Entry(deadline: deadline, sequence: nextSequence, modes: modes, timer: timer))
        timer.scheduleSlot = pending.count - 1
        siftUp(pending.count - 1)
    }

    /// Takes `timer` out wherever it waits; does nothing if it waits nowhere (fired, or taken by a stop).
    mutating func remove(_ timer: LongThreadTimer) {
        let slot = timer.scheduleSlot
        timer.scheduleSlot = Self.nowhere
        if slot >= 0 {
            let last = pending.count - 1
            if slot != last {
                pending.swapAt(slot, last)
                pending[slot].timer.scheduleSlot = slot
            }
            pending.removeLast()
            if slot < pending.count {
                siftDown(slot)
                siftUp(slot)
            }
        } else if slot <= Self.dueSlotBase {
            takeDue(at: Self.dueSlotBase - slot)
        }
    }

    /// Moves every timer whose deadline is at or before `now` from the heap to `due`.
    mutating func moveDue(upTo now: UInt64) {
        while let first = pending.first, first.deadline <= now {
            insertDue(popFirst())
        }
    }

    /// Takes the due timer with the earliest deadline among those that may run in a mode of `mask`.
    mutating func takeDue(eligibleIn mask: ModeTable.Mask) -> Entry? {
        guard dueCount > 0, let index = due[dueHead...].firstIndex(where: { $0.map { $0.modes & mask != 0 } ?? false })
        else { return nil }
        let entry = takeDue(at: index)
        entry?.timer.scheduleSlot = Self.nowhere
        return entry
    }

    /// Whether a due timer may run in a mode of `mask`. Exact (a false yes would signal the timer
    /// source for nothing, and a run that returns after each handled source would spin on it).
    func hasDue(eligibleIn mask: ModeTable.Mask) -> Bool {
        dueCount > 0 && due[dueHead...].contains { $0.map { $0.modes & mask != 0 } ?? false }
    }

    /// Forgets every timer (a stop cancels them itself).
    mutating func removeAll() {
        for entry in pending { entry.timer.scheduleSlot = Self.nowhere }
        for entry in due[dueHead...] { entry?.timer.scheduleSlot = Self.nowhere }
        pending = []
        due = []
        dueHead = 0
        dueCount = 0
    }

    // MARK: - Due queue

    /// Puts `entry` in `due` by deadline: at the end (the heap hands timers over in deadline
    /// order), unless due timers wait for a mode with later deadlines than this one, which was
    /// scheduled for an instant already passed meanwhile; it then goes before them.
    private mutating func insertDue(_ entry: Entry) {
        var index = due.count
        while index > dueHead, due[index - 1].map({ Self.precedes(entry, $0) }) ?? true { index -= 1 }
        // Back past the holes walked over: just before the first timer it precedes, or at the end.
        while index < due.count, due[index] == nil { index += 1 }
        due.insert(entry, at: index)
        dueCount += 1
        for slot in index..<due.count { due[slot]?.timer.scheduleSlot = Self.dueSlotBase - slot }
    }

    /// Empties slot `index` of `due`; returns what it held. Advances the head past holes, and
    /// compacts once the holes outnumber the timers.
    @discardableResult
    private mutating func takeDue(at index: Int) -> Entry? {
        guard let entry = due[index] else { return nil }
        due[index] = nil
        dueCount -= 1
        while dueHead < due.count, due[dueHead] == nil { dueHead += 1 }
        if dueCount == 0 {
            due.removeAll(keepingCapacity: true)
            dueHead = 0
        } else if due.count >= 64, due.count > 2 * dueCount {
            compactDue()
        }
        return entry
    }

    private mutating func compactDue() {
        due = due[dueHead...].filter { $0 != nil }
        dueHead = 0
        for (index, entry) in due.enumerated() { entry?.timer.scheduleSlot = Self.dueSlotBase - index }
    }

    // MARK: - Heap

    private static func precedes(_ a: Entry, _ b: Entry) -> Bool {
        a.deadline != b.deadline ? a.deadline < b.deadline : a.sequence < b.sequence
    }

    private mutating func popFirst() -> Entry {
        let last = pending.count - 1
        if last > 0 {
            pending.swapAt(0, last)
            pending[0].timer.scheduleSlot = 0
        }
        let entry = pending.removeLast()
        if !pending.isEmpty { siftDown(0) }
        return entry
    }

    private mutating func siftUp(_ start: Int) {
        var child = start
        while child > 0 {
            let parent = (child - 1) / 2
            guard Self.precedes(pending[child], pending[parent]) else { break }
            swapSlots(child, parent)
            child = parent
        }
    }

    private mutating func siftDown(_ start: Int) {
        var parent = start
        let count = pending.count
        while true {
            let left = 2 * parent + 1
            guard left < count else { return }
            let right = left + 1
            var first = left
            if right < count, Self.precedes(pending[right], pending[left]) { first = right }
            guard Self.precedes(pending[first], pending[parent]) else { return }
            swapSlots(parent, first)
            parent = first
        }
    }

    private mutating func swapSlots(_ a: Int, _ b: Int) {
        pending.swapAt(a, b)
        pending[a].timer.scheduleSlot = a
        pending[b].timer.scheduleSlot = b
    }
}
