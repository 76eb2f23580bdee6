import CLongThreadsShims
import Glibc

/// The stop path: a request any thread can make, the loop's exit, and the wait for the pthread.
extension ThreadCore {
    /// Begins a stop (or turns a draining stop into a discarding one). Any thread, never blocks.
    ///
    /// The request is a state change, a signalled source and a `CFRunLoopStop`: the stop alone
    /// is lost when the loop is between two runs, a signalled source is not.
    /// Timers end here: a draining thread does not wait for them.
    func requestStop(_ pending: LongThread.PendingWork) {
        typealias Taken = (engine: RunLoopEngine?, dropped: [QueueEntry], mustTell: Bool, timers: [LongThreadTimer])
        let engine: RunLoopEngine?
        var toTell: [WorkItem] = []
        let timers: [LongThreadTimer]
        do {
            let taken = withLockWaking { state, wake -> Taken? in
                let action = state.lifecycle.stopRequested(pending)
                if action == .none { return nil }
                // A parked loop sleeps on its bell, not in CF: rung, it sees the stop at once.
                wake.endingPark(&state)
                // Until `stopFinished`, the loop thread may not announce its end (`finishExit`):
                // every stopper then waits for the same end, and `.stopped` follows `.stopRequested`.
                state.backpressure?.wakeAll() // producers waiting for room: they now get `.stopped`
                let timers = Array(state.timers.values)
                state.timers = [:]
                state.timerSchedule.removeAll()
                guard action == .discard else { return (state.engine, [], false, timers) }
                hints.bitwiseOr(Hints.discard, ordering: .relaxed)
                // Jobs stay: the thread runs them before it ends (`runRemainingJobs`).
                let (dropped, mustTell) = state.queue.removeAllButJobs()
                state.counts.discarded += dropped.count
                return (state.engine, dropped, mustTell, timers)
            }
            guard let (takenEngine, dropped, mustTell, takenTimers) = taken else { return }
            // A paused test thread's gate opens for a stop.
            if hints.load(ordering: .relaxed) & Hints.harnessed != 0 { testSeamStopBegan() }
            engine = takenEngine
            timers = takenTimers
            instrument?.record(.stopRequested(name: name, pending: pending))
            if mustTell { toTell = Self.itemsToTell(in: dropped) }
        }
        // Outside the lock, and after this scope released the dropped closures: the waiters' own
        // closures and the timers' go too, then each waiter is told `.discarded` and finds every
        // closure the stop dropped gone. Both before `stopFinished` lets the loop (and so any
        // stopper) finish.
        toTell += timers.compactMap { $0.cancelReturningWork() }
        Self.tell(toTell)
        stopFinished()
        // Nil when the loop never ran (it sees the stop when it starts) or has exited.
        engine?.stopRun()
    }

    /// A stopper released what it took; the last one lets a waiting `finishExit` go on.
    private func stopFinished() {
        let exitWaiting = shared.withLock { $0.lifecycle.stopReleased() }
        exitWaiting?.signal()
    }

    /// Loop thread, before it announces its end: waits until every stopper has released what it
    /// took from the queue and recorded its request. A stopper never waits for the loop while it
    /// releases, so this cannot deadlock. It waits as for a reply (a short spin while a CPU is
    /// spare, then sleep): a stopper in flight is running and usually done within microseconds
    /// (a loop that was lingering sees the stop before the stopper has finished), and sleeping
    /// would cost the thread's end a wake-up (~35 µs on an idle VM CPU).
    private func waitForStopsInFlight() {
        let event = shared.withLock { $0.lifecycle.waitForStopsReleased() }
        event?.waitForReply(policy: waitPolicy)
    }

    /// The items of `entries` that have someone to tell (a waiter, a job to hand on), in order.
    /// Told (`tell`) once `entries` is gone, so every closure dropped with them is released first.
    /// Called only when some entry must be told: a million fire-and-forget closures are just freed
    /// with their array.
    private static func itemsToTell(in entries: borrowing [QueueEntry]) -> [WorkItem] {
        var items: [WorkItem] = []
        for index in entries.indices where entries[index].item.mustBeTold { items.append(entries[index].item) }
        return items
    }

    /// Releases each dropped item's closure, then tells its waiter `.discarded` (or hands a job on):
    /// no waiter is told while another's closure lives.
    static func tell(_ items: [WorkItem]) {
        for item in items { item.releaseWork() }
        for item in items { item.discard() }
    }

    /// Loop thread, after the last run: refuse everything, release everything, leave the loop clean.
    func finishExit() {
        // Jobs still queued run here, on the thread (a start whose setUp threw never drained).
        discardBatch()
        runRemainingJobs()
        var toTell: [WorkItem] = []
        let leftoverCount: Int
        let attachments: [any LoopAttachment]
        let descriptorWatches: DescriptorWatches?
        do {
            let (leftovers, taken, watches) = shared.withLock {
                state -> ((entries: [QueueEntry], mustTell: Bool), [any LoopAttachment], DescriptorWatches?) in
                state.lifecycle.loopExited()
                state.engine = nil
                let attachments = Array(state.attachments.values)
                state.attachments = [:]
                defer { state.descriptorWatches = nil }
                return (state.queue.removeAll(), attachments, state.descriptorWatches)
            }
            attachments = taken
            descriptorWatches = watches
            leftoverCount = leftovers.entries.count
            if leftovers.mustTell { toTell = Self.itemsToTell(in: leftovers.entries) }
        }
        Self.tell(toTell) // after the leftovers' closures were released, as a stop does
        discardBatch()
        for attachment in attachments { attachment.cancel() }
        let (tasksRun, discarded) = shared.withLock { state in
            publishCounters(into: &state, ran: 0)
            state.counts.discarded += leftoverCount
            return (state.counts.tasksRun, state.counts.discarded)
        }
        // The descriptor sources' epoll instances close here (nothing calls them out after this:
        // the loop never runs again); CF's thread-exit finaliser removes the work source and
        // frees the loop and its descriptors (`RunLoopEngine.removeFromLoop` says why not before).
        descriptorWatches?.tearDown()
        waitForStopsInFlight()
        instrument?.record(.stopped(name: name, tasksRun: tasksRun, discarded: discarded))
    }

    /// Loop thread, last thing: wakes every waiter, blocked or awaiting.
    func announceExit() {
        // The lifecycle is already `.exited` (loopExited or startFailed, under this lock): no task
        // adds itself to the list any more.
        let waiters = shared.withLock { $0.lifecycle.takeExitWaiters() }
        if hints.load(ordering: .relaxed) & Hints.harnessed != 0 { testSeamLoopExited() }
        exited.signal()
        for waiter in waiters { waiter.resume() }
    }

    /// Suspends until the pthread has ended and been joined. Not on the thread itself.
    func waitUntilExit() async {
        if !shared.withLock({ $0.lifecycle.hasThread }) { return }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let waits = shared.withLock { $0.lifecycle.awaitExit(continuation) }
            if !waits { continuation.resume() }
        }
        // The thread has left its loop and is ending: the join blocks only for its last steps.
        waitUntilExit(timeout: nil)
    }

    /// Waits until the pthread has ended and been joined; false if `timeout` passed first.
    /// Not on the thread itself.
    @discardableResult
    func waitUntilExit(timeout: Duration?) -> Bool {
        if !shared.withLock({ $0.lifecycle.hasThread }) { return true }
        // Without a timeout the joiner goes straight to the join, which returns once the thread
        // has ended: waiting for `exited` first would cost one more sleep and wake-up per stop. The join
        // spins first while a CPU is spare: the thread's last steps take about what a sleeping
        // joiner's wake-up costs on a VM.
        if let timeout, !exited.wait(timeout: timeout) { return false }
        let (action, joined) = shared.withLock { state -> (Lifecycle.JoinAction, OneShotEvent?) in
            let action = state.lifecycle.claimJoin()
            guard action == .waitForJoiner else { return (action, nil) }
            return (action, state.lifecycle.joinedEvent())
        }
        switch action {
        case .join(let thread) where pthread_equal(thread, pthread_self()) != 0:
            // The last handle died during the thread's own exit (a block CF frees in its thread-exit
            // finaliser held it): it cannot join itself, so it detaches.
            pthread_detach(thread)
            joinFinished()
        case .join(let thread):
            let rc = join(thread)
            precondition(rc == 0, "BUG IN LongThreads (please report): pthread_join failed with \(rc)")
            joinFinished()
        case .waitForJoiner:
            joined?.wait()
        case .done:
            exited.wait() // joined already, or detached by its own last handle
        }
        return true
    }

    /// `pthread_join(thread)`, spinning first (on `pthread_tryjoin_np`) as `waitPolicy` rules
    /// (`WaitPolicy.joinSpinBudget`). Returns what the join returns.
    private func join(_ thread: pthread_t) -> Int32 {
        let learning = WaitLearning.current
        let start = Int64(CLongThreadsShims_monotonicNanoseconds())
        let spinFor = waitPolicy.joinSpinBudget(for: replierKey, now: start, &learning.pointee)
        if spinFor > 0 {
            var result: Int32 = EBUSY
            let waited = CLongThreadsShims_joinSpin(thread, start, spinFor, &result)
            learning.pointee.joins.record(won: waited >= 0, waited: waited)
            if waited >= 0 { return result }
        }
        return pthread_join(thread, nil)
    }

    /// The joiner is done: wakes the callers that waited for it, if any.
    private func joinFinished() {
        let joined = shared.withLock { $0.lifecycle.joinFinished() }
        joined?.signal()
    }

    /// The last handle is gone. On another thread: stop, drain and join. On the thread itself
    /// (the handle died inside a task): request the stop and detach, since nobody is left to join.
    func handleReleased() {
        if isCurrent {
            requestStop(.drain)
            if shared.withLock({ $0.lifecycle.detachRequested() }) {
                pthread_detach(pthread_self())
            }
        } else {
            requestStop(.drain)
            waitUntilExit(timeout: nil)
        }
    }
}
