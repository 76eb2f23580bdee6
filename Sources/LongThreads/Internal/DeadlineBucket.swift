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
    /// Any thread: queues `item` for `deadline` in `modes`.
    func enqueue(_ item: any WaitingWork, at deadline: ContinuousClock.Instant, modes: [RunLoop.Mode]) throws(LongThreadError) {
        let key = DeadlineKey(deadline: deadline, modes: modes.map(\.rawValue))
        let bucket = try shared.withLock { (state: inout SharedState) throws(LongThreadError) -> DeadlineBucket? in
            guard state.lifecycle.acceptsWork, state.engine != nil else { throw LongThreadError.stopped }
            _ = try state.mask(for: modes)
            if let bucket = state.deadlines[key] {
                bucket.append(item)
                return nil
            }
            let bucket = DeadlineBucket(core: self, key: key, first: item)
            state.deadlines[key] = bucket
            return bucket
        }
        guard let bucket else { return }
        let timer = LongThreadTimer(core: self, work: .once(.waiting(bucket)), interval: nil, tolerance: .zero)
        do throws(LongThreadError) {
            try schedule(timer, after: ContinuousClock.now.duration(to: deadline), modes: modes)
        } catch {
            // A stop began since: the bucket's work (this item's included) is discarded.
            bucket.discard()
            throw error
        }
    }
}
