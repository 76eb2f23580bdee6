/// One piece of work a thread accepted, as it sits in the queue.
///
/// Fire-and-forget work is the bare closure (no allocation beyond the closure's own context); work
/// with a waiter carries an object that reports how it ended. `discard()` is the only way work
/// leaves the queue unrun, and it always tells the waiter.
enum WorkItem {
    case fireAndForget(@Sendable () -> Void)
    /// Fire-and-forget work with a label for stall reports (the label costs an allocation).
    case labeled(LabeledWork)
    /// Fire-and-forget work with its poster's context (`ContextCarrier`), and its label if any:
    /// one allocation, instead of a closure wrapping the work in its context.
    case inContext(ContextWork)
    case waiting(any WaitingWork)
    /// A Swift concurrency job (an actor pinned to the thread, or a task preferring it as its task
    /// executor): two words, no allocation, no reference counting per job. The core is unretained:
    /// the pthread holds it while the loop runs, and every discard site holds it too.
    /// See `ThreadCore+Executor.swift`.
    case job(UnownedJob, Unmanaged<ThreadCore>)
    /// A slot whose item was taken out (run or discarded). Never run.
    case taken

    /// Loop thread only. Runs the work and reports its end to its waiter.
    @inline(__always)
    func run() {
        switch self {
        case .fireAndForget(let work): work()
        case .labeled(let work): work.work()
        case .inContext(let work): work.run()
        case .waiting(let work): work.run()
        case .job(let job, let core): core._withUnsafeGuaranteedRef { $0.runJob(job) }
        case .taken: break
        }
    }

    /// The label shown in stall reports, if the poster gave one.
    @inline(__always)
    var label: String? {
        switch self {
        case .fireAndForget, .job, .taken: nil
        case .labeled(let work): work.label
        case .inContext(let work): work.label
        case .waiting(let work): work.label
        }
    }

    /// Fire-and-forget work, labelled when a label was given, in its poster's context (`ContextCarrier`).
    @inline(__always)
    static func make(_ work: @escaping @Sendable () -> Void, label: String?) -> WorkItem {
        boxed(work, label: label) ?? .fireAndForget(work)
    }

    /// Fire-and-forget work in its box, when it needs one: in its poster's context when a
    /// propagator captured one (`ContextCarrier`), else labelled when a label was given; nil when
    /// neither, so that the caller can make the bare `.fireAndForget` straight into its queue entry.
    /// Inlined into each post, so that a capture that finds no context costs its call and little more.
    @inline(__always)
    static func boxed(_ work: @escaping @Sendable () -> Void, label: String?) -> WorkItem? {
        let inContext = ContextCarrier.capture(label: label) { installed, captured in
            WorkItem.inContext(ContextWork(installed, captured: captured, label: label, work: work))
        }
        if let inContext { return inContext }
        guard let label else { return nil }
        return .labeled(LabeledWork(label: label, work: work))
    }

    /// Whether it is a Swift concurrency job (never refused by a queue limit).
    @inline(__always)
    var isJob: Bool {
        if case .job = self { return true }
        return false
    }

    /// Whether `discard()` does anything: it tells a waiter, or hands a job on.
    @inline(__always)
    var mustBeTold: Bool {
        // Cases matched without binding their payloads: a `switch` here copied the item (a
        // retain and release of the closure's context) on every post.
        if case .waiting = self { return true }
        if case .job = self { return true }
        return false
    }

    /// Before `discard()`: releases a waiter's closure without telling it yet (`WaitingWork`).
    func releaseWork() {
        if case .waiting(let work) = self { work.releaseWork() }
    }

    /// Tells the waiter `LongThreadError.discarded`; the closure is released with the item.
    /// A job has nobody to tell: a stop never discards one (it runs on the thread before the
    /// thread ends, `ThreadCore.runRemainingJobs`), so reaching here with one is a job that can no
    /// longer run on its thread, and must not run elsewhere (`ThreadCore.jobAfterEnd`).
    func discard() {
        switch self {
        case .waiting(let work): work.discard()
        case .job(_, let core): core.takeUnretainedValue().jobAfterEnd()
        case .fireAndForget, .labeled, .inContext, .taken: break
        }
    }
}

/// An entry of the queue: the item, who posted it (`PostKind`), the run-loop modes it may run in
/// (`ModeTable` bits), and when it was posted (monotonic ns; 0 when nobody listens: no
/// instrument, no stall monitor).
struct QueueEntry {
    var item: WorkItem
    /// Right after the item: it fits in the item's padding (the entry stays 40 bytes).
    var kind: PostKind = .queued
    var modes: ModeTable.Mask
    var postedAt: UInt64 = 0

    /// Moves the item out, leaving `.taken` so the closure is released when the caller is done with it.
    /// A swap, not a copy and an overwrite: no retain/release pair per item.
    @inline(__always)
    mutating func take() -> WorkItem {
        var item = WorkItem.taken
        swap(&item, &self.item)
        modes = 0
        return item
    }

    /// Taken entries have no modes left (every other entry has at least one bit), so this reads
    /// one word instead of switching over the item.
    @inline(__always)
    var isTaken: Bool { modes == 0 }
}

final class LabeledWork: Sendable {
    let label: String
    let work: @Sendable () -> Void

    init(label: String, work: @escaping @Sendable () -> Void) {
        self.label = label
        self.work = work
    }
}

/// Fire-and-forget work with what its poster's propagator captured (`WorkItem.inContext`).
final class ContextWork: Sendable {
    /// The propagator's box (one retain, not a copy of the propagator).
    let installed: ContextCarrier.Installed
    let captured: any Sendable
    let label: String?
    let work: @Sendable () -> Void

    init(_ installed: ContextCarrier.Installed, captured: any Sendable, label: String?, work: @escaping @Sendable () -> Void) {
        self.installed = installed
        self.captured = captured
        self.label = label
        self.work = work
    }

    /// Loop thread only. Runs the work inside its poster's context.
    @inline(__always)
    func run() {
        installed.propagator.restore(captured, label: label, around: work)
    }
}

/// Work with a waiter. Exactly one of `run()` and `discard()` is called, exactly once.
protocol WaitingWork: AnyObject, Sendable {
    /// The label shown in stall reports.
    var label: String? { get }
    /// Loop thread only. Runs the work (or skips it if its waiter gave up) and reports the outcome.
    func run()
    /// Any thread. Reports ``LongThreadError/discarded`` and releases the work unrun.
    func discard()
    /// Any thread, the one that then calls `discard()`: releases the work's closure unrun without
    /// telling its waiter yet, so a stop can release every closure it drops before it tells anyone.
    func releaseWork()
}
