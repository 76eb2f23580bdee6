/// One piece of work a thread accepted, as it sits in the queue.
///
/// Fire-and-forget work is the bare closure (no allocation beyond the closure's own context); work
/// with a waiter carries an object that reports how it ended. `discard()` is the only way work
/// leaves the queue unrun, and it always tells the waiter.
enum WorkItem {
    case fireAndForget(@Sendable () -> Void)
    case waiting(any WaitingWork)
    /// A slot whose item was taken out (run or discarded). Never run.
    case taken

    /// Loop thread only. Runs the work and reports its end to its waiter.
    @inline(__always)
    func run() {
        switch self {
        case .fireAndForget(let work): work()
        case .waiting(let work): work.run()
        case .taken: break
        }
    }

    /// Tells the waiter `LongThreadError.discarded`; the closure is released with the item.
    func discard() {
        if case .waiting(let work) = self { work.discard() }
    }
}

/// An entry of the queue: the item and the run-loop modes it may run in (`ModeTable` bits).
struct QueueEntry {
    var item: WorkItem
    var modes: ModeTable.Mask

    /// Moves the item out, leaving `.taken` so the closure is released when the caller is done with it.
    @inline(__always)
    mutating func take() -> WorkItem {
        let item = self.item
        self.item = .taken
        modes = 0
        return item
    }

    var isTaken: Bool {
        if case .taken = item { return true }
        return false
    }
}

/// Work with a waiter. Exactly one of `run()` and `discard()` is called, exactly once.
protocol WaitingWork: AnyObject, Sendable {
    /// Loop thread only. Runs the work (or skips it if its waiter gave up) and reports the outcome.
    func run()
    /// Any thread. Reports ``LongThreadError/discarded`` and releases the work unrun.
    func discard()
}
