/// A thread's pending `LongThreadTimer`s, by deadline: what its one CF timer is armed for.
///
/// Each timer used to be a CF timer of its own, and CF keeps a mode's timers in one sorted array
/// that it searches linearly to remove one: at 100,000 pending timers a cancel cost ~70 µs. Here
/// they wait in a binary heap (each timer knows its slot, so a cancel is O(log n) too), and the
/// thread's engine arms one CF timer for the earliest deadline.
///
/// A deadline that passed moves its timer to `due`, in deadline order, until a pass of the loop in
/// one of its modes runs it: while the loop runs another mode (a nested tracking run), a timer of
/// the default mode waits, as a CF timer in that mode would.
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

    /// `LongThreadTimer.scheduleSlot` of a timer in `due`, or in neither.
    static let inDue = -2
    static let nowhere = -1

    /// The heap: `pending[0]` has the earliest deadline; each timer's `scheduleSlot` is its index.
    private var pending: [Entry] = []
    /// Timers whose deadline passed, oldest deadline first, waiting for a pass in one of their modes.
    private(set) var due: [Entry] = []
    private var nextSequence: UInt64 = 0
    /// The deadline the engine's CF timer is armed for; `.max` when it is not armed.
    var armedFor: UInt64 = .max

    var isEmpty: Bool { pending.isEmpty && due.isEmpty }

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
        } else if slot == Self.inDue, let index = due.firstIndex(where: { $0.timer === timer }) {
            // Linear, but `due` holds only timers waiting for a mode the loop does not run now.
            due.remove(at: index)
        }
    }

    /// Moves every timer whose deadline is at or before `now` from the heap to `due`.
    mutating func moveDue(upTo now: UInt64) {
        while let first = pending.first, first.deadline <= now {
            let entry = popFirst()
            entry.timer.scheduleSlot = Self.inDue
            due.append(entry)
        }
    }

    /// Takes the oldest due timer that may run in a mode of `mask`.
    mutating func takeDue(eligibleIn mask: ModeTable.Mask) -> Entry? {
        guard let index = due.firstIndex(where: { $0.modes & mask != 0 }) else { return nil }
        let entry = due.remove(at: index)
        entry.timer.scheduleSlot = Self.nowhere
        return entry
    }

    /// Whether a due timer may run in a mode of `mask`.
    func hasDue(eligibleIn mask: ModeTable.Mask) -> Bool {
        due.contains { $0.modes & mask != 0 }
    }

    /// Forgets every timer (a stop cancels them itself).
    mutating func removeAll() {
        for entry in pending { entry.timer.scheduleSlot = Self.nowhere }
        for entry in due { entry.timer.scheduleSlot = Self.nowhere }
        pending = []
        due = []
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
