import CLongThreadsShims

/// Waiting for a caller's next request after answering it: a loop thread that has just run a
/// blocked caller's item will often get that caller's next item within microseconds, and sleeping
/// in CF meanwhile costs a wake-up (a system call for the caller, several for the loop, and a pass
/// of CF's). So it waits a little first: it lingers (spins, the caller on another CPU) or parks
/// (sleeps on a futex, the caller on its own CPU). The drain decides, at each refill
/// (`refillBatch`), and a wait counts toward its callout's budget (`DrainPass`).
extension ThreadCore {
    /// Looks for work, without sleeping, for up to `nanoseconds` since `start`, while the queue
    /// marks the consumer active (producers skip the wake-up: the loop thread is awake). Then moves
    /// what came into the batch, or marks the consumer inactive. Returns what a refill returns.
    /// Ends early for a stop. See `WaitPolicy.lingerBudget` for when it is worth it.
    func linger(forNanoseconds nanoseconds: Int64, from start: UInt64) -> (gotMore: Bool, isStopping: Bool) {
        while true {
            // About a microsecond between looks: a look takes the producers' lock.
            CLongThreadsShims_relax(32)
            let waited = CLongThreadsShims_monotonicNanoseconds() - start
            let expired = waited >= UInt64(nanoseconds)
            let outcome: (gotMore: Bool, isStopping: Bool)? = shared.withLock { state in
                let isStopping = state.lifecycle.isStopping
                if state.queue.isEmpty, !expired, !isStopping { return nil }
                let before = loop.batch.entries.count
                let gotMore = state.queue.moveAll(to: &loop.batch.entries)
                if gotMore { noteBatchGrew(from: before) }
                return (gotMore, isStopping)
            }
            if let outcome {
                if outcome.gotMore {
                    waitPolicy.lingerWon(after: Int64(waited), &WaitLearning.current.pointee)
                } else if !outcome.isStopping {
                    // Nobody came in time: judge the linger when the next post comes, by its stamp.
                    loop.lingerMissedAt = start
                    hints.bitwiseOr(Hints.stampsNextPost, ordering: .relaxed)
                }
                return outcome
            }
        }
    }

    /// Sleeps on the park bell until a post, a stop, a new timer, descriptor source, observer or
    /// common mode, or the first `statistics` read rings it (each finds the consumer parked:
    /// `WorkQueue.unpark`), or `nanoseconds` passed.
    /// The refill that found no work marked the consumer parked and read the bell's `seen` value
    /// under the lock. Then moves what came into the batch, which unparks. See
    /// `WaitPolicy.parkBudget` for when it is worth it.
    func park(forNanoseconds nanoseconds: Int64, seen: UInt32) -> (gotMore: Bool, isStopping: Bool) {
        waker.sleepParked(seen: seen, forNanoseconds: nanoseconds)
        return shared.withLock { state in
            let before = loop.batch.entries.count
            let gotMore = state.queue.moveAll(to: &loop.batch.entries)
            if gotMore { noteBatchGrew(from: before) }
            return (gotMore, state.lifecycle.isStopping)
        }
    }

    /// Loop thread: the first stamped item since a linger found no work was posted at `postedAt`.
    /// A caller that came back a little after the linger gave up lengthens the next lingers (its
    /// wake-up took longer than the budget: on a VM waking an idle CPU takes tens of µs); one that
    /// came back much later, or another producer's post, counts as a lost linger.
    func learnFromMissedLinger(postedAt: UInt64) {
        let late = postedAt > loop.lingerMissedAt ? postedAt - loop.lingerMissedAt : 0
        waitPolicy.lingerMissed(late: Int64(late), &WaitLearning.current.pointee)
        loop.lingerMissedAt = 0
        hints.bitwiseAnd(~Hints.stampsNextPost, ordering: .relaxed)
    }

    /// Under the lock: how long a park may last, at most `budget`. Not past the thread's next timer
    /// deadline, and not at all while the thread has descriptor sources or observers: their events
    /// would wait for the park's end (CF's own timers and sources do, at most `budget`).
    func parkLength(_ budget: Int64, state: borrowing SharedState) -> Int64 {
        guard state.attachments.isEmpty else { return 0 }
        guard let deadline = state.timerSchedule.earliestDeadline else { return budget }
        let now = CLongThreadsShims_monotonicNanoseconds()
        return deadline > now ? min(budget, Int64(clamping: deadline - now)) : 0
    }
}
