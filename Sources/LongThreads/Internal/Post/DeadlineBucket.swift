import Foundation

/// Where work for a deadline waits: one bucket per deadline and list of modes.
struct DeadlineKey: Hashable {
    let deadline: ContinuousClock.Instant
    let modes: [String]
}

/// The work due at one deadline, in the order it was posted, behind one `LongThreadTimer` (the
/// same mechanism as `perform(after:)`).
///
/// The thread's timers are ordered by a monotonic deadline each computes from the instant when it
/// is scheduled, so two timers for the same instant may differ by the clock reads between them;
/// one timer per deadline keeps work posted for equal deadlines in FIFO order. Posting to a bucket
/// and taking its items both happen under the thread's lock: work posted after the timer fired
/// goes to a new bucket (and timer).
final class DeadlineBucket: WaitingWork, @unchecked Sendable {
    private weak var core: ThreadCore?
    private let key: DeadlineKey
    // Guarded by the core's lock (`ThreadCore.shared`).
    private var items: [any WaitingWork]
    /// Taken and released by a discarding stop (`releaseWork`), not told yet. Only the discarding
    /// thread touches it, between its `releaseWork()` and `discard()` calls.
    private var released: [any WaitingWork] = []
    /// The timer the bucket waits on; guarded by the core's lock. Weak: the timer holds the bucket.
    weak var timer: LongThreadTimer?

    var label: String? { nil }

    init(core: ThreadCore, key: DeadlineKey, first: any WaitingWork) {
        self.core = core
        self.key = key
        self.items = [first]
    }

    /// Under the core's lock: adds `item` behind the others.
    func append(_ item: any WaitingWork) {
        items.append(item)
    }

    /// Loop thread, from the timer's callout: runs the items in order. A discarding stop that
    /// begins meanwhile drops the rest: all released first, then each told.
    func run() {
        guard let core else { return }
        let items = take(from: core)
        for (index, item) in items.enumerated() {
            if core.discardRequested {
                Self.releaseThenTell(items[index...])
                return
            }
            item.run()
        }
    }

    /// A stop cancelled the timer: releases every item's closure (those `releaseWork` took
    /// already are), then tells each.
    func discard() {
        let fresh = core.map(take(from:)) ?? []
        for item in fresh { item.releaseWork() }
        let items = released + fresh
        released = []
        for item in items { item.discard() }
    }

    /// Before `discard()`, for a stop that drops more than this bucket: releases every item's
    /// closure now, telling nobody yet.
    func releaseWork() {
        guard let core else { return }
        let items = take(from: core)
        for item in items { item.releaseWork() }
        released += items
    }

    /// Any thread: `item` was cancelled before its deadline (`Withdrawal`): takes it out, and
    /// when it was the last, takes the bucket out of the thread and cancels its timer, so neither
    /// waits in the loop until the deadline. Does nothing once the timer took the items.
    func withdraw(_ item: any WaitingWork) {
        guard let core else { return }
        let emptied = core.shared.withLock { state -> LongThreadTimer? in
            guard let index = items.firstIndex(where: { $0 === item }) else { return nil }
            items.remove(at: index)
            guard items.isEmpty else { return nil }
            if state.deadlines[key] === self { state.deadlines[key] = nil }
            return timer
        }
        emptied?.cancel()
    }

    private static func releaseThenTell(_ items: ArraySlice<any WaitingWork>) {
        for item in items { item.releaseWork() }
        for item in items { item.discard() }
    }

    private func take(from core: ThreadCore) -> [any WaitingWork] {
        core.shared.withLock { state in
            if state.deadlines[key] === self { state.deadlines[key] = nil }
            defer { items = [] }
            return items
        }
    }
}

extension ThreadCore {
    /// Any thread: queues `item` for `deadline` in `modes`; returns the bucket it waits in.
    @discardableResult
    func enqueue(_ item: any WaitingWork, at deadline: ContinuousClock.Instant, modes: [RunLoop.Mode]) throws(LongThreadError) -> DeadlineBucket {
        if let refusal = refusalForTest(.queued) { throw refusal }
        let key = DeadlineKey(deadline: deadline, modes: modes.map(\.rawValue))
        let (bucket, newTimer) = try shared.withLock { (state: inout SharedState) throws(LongThreadError) -> (DeadlineBucket, LongThreadTimer?) in
            guard state.lifecycle.acceptsWork, state.engine != nil else { throw LongThreadError.stopped }
            _ = try state.mask(for: modes)
            if let bucket = state.deadlines[key] {
                bucket.append(item)
                return (bucket, nil)
            }
            let bucket = DeadlineBucket(core: self, key: key, first: item)
            // Made under the lock, so that a cancel emptying the bucket before it is scheduled
            // finds the timer and cancels it (`schedule` then skips it).
            let timer = LongThreadTimer(core: self, work: .once(.waiting(bucket)), interval: nil, tolerance: .zero)
            bucket.timer = timer
            state.deadlines[key] = bucket
            return (bucket, timer)
        }
        guard let newTimer else { return bucket }
        do throws(LongThreadError) {
            // The bucket's timer is the library's: the refusal a test asked for applied to the post above.
            try schedule(newTimer, after: clockNow.duration(to: deadline), modes: modes, kind: .own)
        } catch {
            // A stop began since: the bucket's work (this item's included) is discarded.
            bucket.discard()
            throw error
        }
        return bucket
    }
}
