import CLongThreadsShims
import Foundation

/// The post side: any thread queues work under the thread's lock (`shared`), and wakes the loop
/// only when the queue says it sleeps (`withLockWaking`). The loop side drains it
/// (`ThreadCore+Drain.swift`).
extension ThreadCore {
    /// Queues `item` for the run-loop `modes` (nil: the default mode), or throws `.stopped` once a
    /// stop has begun.
    /// `kind`: who posts (`PostKind`); urgent and own posts go ahead of the waiting items, in any
    /// mode (`performAtFrontOfQueue`). The library's own posts go through `enqueueOwn`. With a
    /// queue limit, throws `.queueFull` when full (see `Backpressure`).
    /// `item` is made under the lock, straight into its queue entry: made outside, it would be copied
    /// in (a retain and a release of the closure's context per post).
    /// Returns whether the post found the loop thread draining the queue (it needed no wake-up, and
    /// that thread is on a CPU): a blocked caller may then spin for its reply even under load.
    @inline(__always) @discardableResult
    func enqueue(_ item: @autoclosure () -> WorkItem, modes: [RunLoop.Mode]?, kind: PostKind = .queued) throws(LongThreadError) -> Bool {
        // Posts are timed only for someone who listens: the hot path reads no clock otherwise.
        let postedAt = hints.load(ordering: .relaxed) & Hints.stampsPosts != 0 ? try stampPost(kind) : 0
        let foundDraining = try withLockWaking { (state: inout SharedState, wake: inout Wake) throws(LongThreadError) -> Bool in
            guard state.lifecycle.acceptsWork else { throw LongThreadError.stopped }
            let draining = state.queue.consumerActive
            let mustWake: Bool
            if kind.goesFirst {
                // Not refused by a queue limit: jumping the queue is for the rare urgent item.
                if hasQueueLimit { try state.backpressure?.admit(refusable: false) }
                mustWake = state.queue.appendUrgent(QueueEntry(item: item(), kind: kind, modes: .max, postedAt: postedAt))
                hints.bitwiseOr(Hints.urgent, ordering: .relaxed)
            } else {
                var mask = ModeTable.defaultBit
                if let modes {
                    mask = try state.mask(for: modes)
                }
                let entry = QueueEntry(item: item(), kind: kind, modes: mask, postedAt: postedAt)
                // `hasQueueLimit` is a constant: after `perform` tested it, the compiler drops this check.
                if hasQueueLimit { try state.backpressure?.admit(refusable: !entry.item.isJob) }
                mustWake = state.queue.append(entry)
            }
            guard mustWake else { return draining }
            wake.forWork(&state)
            return false
        }
        // A paused test thread's gate runs urgent and own work without a step. Constant-folded
        // away for queued posts and jobs.
        if kind.goesFirst, hints.load(ordering: .relaxed) & Hints.harnessed != 0 { testSeamPostedAhead() }
        return foundDraining
    }

    /// Any thread: the library's own post (`PostKind.own`): `work` runs on the thread ahead of the
    /// waiting items, in any mode; no queue limit and no test (LongThreadsTestKit) refuses or holds
    /// it. Every post the library makes for itself ahead of the queue goes through here (one in
    /// the thread's order, a bound value's explicit release, posts `PostKind.ownInOrder` through
    /// `enqueue`). Returns false once a stop has begun (the only refusal): the caller's work must
    /// then be done by the thread's end.
    @discardableResult
    func enqueueOwn(_ work: @escaping @Sendable () -> Void) -> Bool {
        (try? enqueue(.fireAndForget(work), modes: nil, kind: .own)) != nil
    }

    /// Any thread, a post of `kind`: the refusal a test asked for (`TestSeam`), taken, when the
    /// thread belongs to the test kit and the post is one a test may refuse (`PostKind.isRefusable`:
    /// never the library's own, never a Swift concurrency job).
    @inline(__always)
    func refusalForTest(_ kind: PostKind) -> LongThreadError? {
        guard kind.isRefusable, hints.load(ordering: .relaxed) & Hints.harnessed != 0 else { return nil }
        return testSeamRefusal(kind)
    }

    /// Posting thread, a post that reads the clock (`Hints.stampsPosts`): throws the refusal a
    /// harnessed thread was asked for, or returns the post's time. Out of line: the unstamped
    /// post stays as it was.
    @inline(never)
    func stampPost(_ kind: PostKind) throws(LongThreadError) -> UInt64 {
        if let refusal = refusalForTest(kind) { throw refusal }
        return CLongThreadsShims_monotonicNanoseconds()
    }
}
