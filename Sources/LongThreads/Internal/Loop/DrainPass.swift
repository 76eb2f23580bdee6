import CLongThreadsShims

/// One callout of the work source (`ThreadCore.engineServiceWork`): its clock, what it ran, and
/// how it ends. Loop thread only, on that callout's stack.
///
/// The contract it keeps: a callout returns to CF within its budget, `budget` ns since it began
/// (work and waits for a caller's next request alike), or one item past it when an item is longer,
/// so that CF's own timers, sources and observers get their pass. The clock is read before an item
/// only now and then while items are quick (a read costs about as much as a posted item's run), and
/// before every item once they are slow (`readClock`); and after each wait, whose end it reads
/// anyway (`resumed`). Two gaps remain, stated in LifeOfAThread.md: quick items followed by slow
/// ones in one pass may run up to `maxItemsPerClockRead - 1` slow items past the budget, and a wait
/// that begins near the budget's end may outlast it by its own length (a park: up to 4 ms).
struct DrainPass {
    /// How long one callout runs (see above): about a millisecond. A budget in items instead
    /// (256) cost a third of the async throughput: a CF pass every 256 cheap items.
    static let budget: UInt64 = 1_000_000
    /// The most items between two reads of the clock while items are quick.
    static let maxItemsPerClockRead = 32

    enum End {
        /// The queue is empty (or holds only work for other modes): the callout ends.
        case drained
        /// A stop is under way and nothing this mode may run is left: the run ends.
        case stopping
        /// More work waits, but CF gets its pass first (the budget is spent, or the batch was
        /// refilled `refillsPerCallout` times): the work source is signalled again.
        case yielding
        /// A discarding stop began: the batch is dropped.
        case discarding
    }

    /// When the callout began (monotonic ns), and the modes its items may run in.
    let started: UInt64
    let eligible: ModeTable.Mask
    var end = End.drained
    /// Items run since the counters were last published, and before that.
    var ran = 0
    var totalRun = 0
    /// Refills that count toward `ThreadCore.refillsPerCallout`.
    var refills = 0
    /// The longest an item run waited since its post (for an instrument).
    var longestWait: UInt64 = 0
    /// Time spent waiting for a caller's next request (lingering or parked): not work.
    var waited: UInt64 = 0
    /// A caller blocked on an item of this callout was answered since the loop last waited for
    /// one: it may post again at once.
    var answeredCaller = false
    /// ... on an item of the batch just run (its refill holds that caller's next request).
    var batchAnsweredCaller = false
    /// Whether one of the thread's timers is due at a yield (nil: not looked at yet): they run
    /// then, before the work the yield signals (`ThreadCore.finishPass`).
    var timersDue: Bool?
    /// The clock is read before the item that makes `itemCount` reach this.
    private(set) var nextClockRead = 1
    /// Items between two reads while items are quick: doubles from 1 to `maxItemsPerClockRead`.
    private var clockInterval = 1
    /// The last read of the clock, and `itemCount` then.
    private var lastRead: (at: UInt64, itemCount: Int)

    init(started: UInt64, eligible: ModeTable.Mask) {
        self.started = started
        self.eligible = eligible
        lastRead = (started, 0)
    }

    /// Items run in this callout so far.
    var itemCount: Int {
        @inline(__always) get { totalRun + ran }
    }

    /// Before an item, once `itemCount` reached `nextClockRead`: reads the clock; returns whether
    /// the budget is spent. Items that took more than a 64th of the budget each since the last
    /// read (one of them may take all of it) have the clock read before every item from now on;
    /// quicker ones, twice as far apart as last time.
    @inline(never)
    mutating func readClock() -> Bool {
        let now = CLongThreadsShims_monotonicNanoseconds()
        if now &- started >= Self.budget { return true }
        let items = itemCount - lastRead.itemCount
        let slow = items > 0 && now &- lastRead.at > UInt64(items) &* (Self.budget / 64)
        clockInterval = slow ? 1 : min(clockInterval &* 2, Self.maxItemsPerClockRead)
        nextClockRead = itemCount + clockInterval
        lastRead = (now, itemCount)
        return false
    }

    /// A wait for a caller's next request ended at `now`, having lasted `waited` ns, and brought
    /// work: returns whether the budget is spent. The wait's end counts as a read of the clock.
    @inline(__always)
    mutating func resumed(at now: UInt64, after waited: UInt64) -> Bool {
        self.waited &+= waited
        lastRead = (now, itemCount)
        nextClockRead = itemCount + clockInterval
        return now &- started >= Self.budget
    }
}
