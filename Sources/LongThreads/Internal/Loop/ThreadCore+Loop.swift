import Foundation

/// The loop side: the run of the loop until a stop, what the engine reports of its runs and
/// wake-ups, and the bookkeeping the drain shares with them. Loop thread only, but where a
/// function says otherwise.
extension ThreadCore: RunLoopEngineDelegate {
    /// Loop thread: `batch` grew from `before` entries (a refill, under the lock).
    func noteBatchGrew(from before: Int) {
        loop.batch.grew(from: before)
        batchWaiting.store(loop.batch.untaken, ordering: .relaxed)
        if before == 0 || batchOldestPostedAt.load(ordering: .relaxed) == 0 {
            batchOldestPostedAt.store(loop.batch.oldestPostedAt, ordering: .relaxed)
        }
    }

    func engineDidEnterRun(_ engine: RunLoopEngine) {
        let mode = engine.currentModeName() ?? RunLoop.Mode.default.rawValue
        loop.runModes.append(mode)
        // A run nested inside a task suspends the drain that was running it: producers must
        // wake it again. Work already waiting gets a look only if it may run in this mode (or a
        // stop must end the run): a signal with nothing to do still counts as a handled source,
        // which ends a `RunLoop.run(mode:before:)` at once, and a task looping on it would spin.
        let (mustLook, timersDue) = shared.withLock { state in
            state.queue.consumerSuspended()
            return (hasWork(eligibleIn: mode, state: state), hasDueTimers(eligibleIn: mode, state: state))
        }
        if mustLook { engine.signal() }
        if timersDue { engine.signalTimers() }
        if hints.load(ordering: .relaxed) & Hints.harnessed != 0 { testSeamDrainSuspended() }
        // The task's callout pauses: the loop turns again (a monitor sees an idle thread).
        if loop.calloutDepth > 0 { publishCalloutStart(0) }
    }

    func engineDidExitRun(_ engine: RunLoopEngine) {
        _ = loop.runModes.popLast()
        // Back in the enclosing run (if any): work for its mode may have arrived meanwhile. It
        // gets a look once that run has the loop again, when the callout that ran the nested run
        // returns (`endCallout`), not now: a signal now is taken by the next run the same callout
        // starts, often a nested run of the same other mode again (a modal loop, or `runNested`
        // going round after each handled source), which can run none of it, returns at once as
        // having handled a source, and exits here to signal again: a busy loop for as long as the
        // modal loop lasts. A nested run outside any callout of ours has no such hook: signalled now.
        if let enclosing = loop.runModes.last {
            let (mustLook, timersDue) = shared.withLock { state in
                (hasWork(eligibleIn: enclosing, state: state), hasDueTimers(eligibleIn: enclosing, state: state))
            }
            if loop.calloutDepth > 0 {
                if mustLook || timersDue { deferLook(work: mustLook, timers: timersDue) }
            } else {
                if mustLook { engine.signal() }
                if timersDue { engine.signalTimers() }
            }
        }
        // The task that ran the loop nested resumes: a new callout, under its own label.
        if loop.calloutDepth > 0 { beginCallout(resuming: true) }
    }

    /// Loop thread: the enclosing run of the callout at `calloutDepth` gets a look at its work or
    /// timers when that callout ends (`endCallout`). Looks for shallower callouts wait below.
    private func deferLook(work: Bool, timers: Bool) {
        if let last = loop.deferredLooks.last, last.depth == loop.calloutDepth {
            loop.deferredLooks[loop.deferredLooks.count - 1].work = last.work || work
            loop.deferredLooks[loop.deferredLooks.count - 1].timers = last.timers || timers
        } else {
            loop.deferredLooks.append((loop.calloutDepth, work, timers))
        }
    }

    /// Loop thread, under the lock: whether accepted work not yet run may run in `mode`, or a
    /// stop is under way (which ends every run).
    private func hasWork(eligibleIn mode: String, state: SharedState) -> Bool {
        // Urgent items run in any mode.
        if state.lifecycle.isStopping || !state.queue.urgent.isEmpty { return true }
        let mask = state.modes.eligibility(inModeNamed: mode)
        if mask == 0 { return false }
        return loop.batch.hasEntry(eligibleIn: mask) || state.queue.entries.contains { $0.modes & mask != 0 }
    }

    /// Loop thread, under the lock: whether a timer whose deadline passed while the loop ran
    /// other modes may run in `mode`.
    private func hasDueTimers(eligibleIn mode: String, state: SharedState) -> Bool {
        guard state.timerSchedule.dueCount > 0 else { return false }
        return state.timerSchedule.hasDue(eligibleIn: state.modes.eligibility(inModeNamed: mode))
    }

    func engineDidWake() {
        loop.unpublished.wakeUps += 1
        if hasInstrument { instrument?.record(.wokeUp(name: name)) }
        checkOwner()
    }

    /// Runs the loop in the default mode until a stop, then drains work waiting for other modes.
    func runUntilStopped(_ engine: RunLoopEngine) {
        // A task may end a run (CFRunLoopStop) or run the loop nested; only a stop ends the loop.
        while !shared.withLock({ $0.lifecycle.isStopping }) {
            engine.runDefaultMode()
        }
        while !discardRequested {
            let mode: String? = shared.withLock { state in
                let first = loop.batch.firstUntaken ?? state.queue.entries.first
                return first.map { state.modes.drainMode(for: $0.modes) }
            }
            guard let mode else { break }
            engine.run(modeNamed: mode)
        }
        runRemainingJobs()
    }
    /// Moves the counters the loop thread keeps without the lock into the shared state.
    func publishCounters(into state: inout SharedState, ran: Int) {
        state.counts.tasksRun += ran
        if state.backpressure != nil { state.backpressure?.finished(ran) }
        state.counts.take(&loop.unpublished)
    }

    /// The modes the run `engine` is in lets the drain run (a mask over `ModeTable`), cached
    /// until the mode or the common set changes.
    func currentEligibility(_ engine: RunLoopEngine) -> ModeTable.Mask {
        guard let mode = engine.currentModeName() else { return 0 }
        let generation = modesGeneration.load(ordering: .acquiring)
        if let cache = loop.eligibilityCache, cache.mode == mode, generation == loop.seenModesGeneration { return cache.mask }
        let mask = shared.withLock { $0.modes.eligibility(inModeNamed: mode) }
        loop.seenModesGeneration = generation
        // A mode nobody posted in yet may get work later: look it up again next time.
        loop.eligibilityCache = mask == 0 ? nil : (mode, mask)
        return mask
    }

    /// Discards everything in the batch, telling each waiter once every dropped closure is released.
    /// Jobs are not dropped: they go back to the head of the queue, in order, and run before the
    /// thread ends (`runRemainingJobs`).
    func discardBatch() {
        var dropped = loop.batch.removeAll()
        batchWaiting.store(0, ordering: .relaxed)
        batchOldestPostedAt.store(0, ordering: .relaxed)
        var toTell: [WorkItem] = []
        var jobs: [QueueEntry] = []
        for index in dropped.indices where !dropped[index].isTaken {
            if dropped[index].item.isJob {
                jobs.append(dropped[index])
                continue
            }
            // A fire-and-forget closure is released here, before any waiter is told below.
            let item = dropped[index].take()
            if item.mustBeTold { toTell.append(item) }
            loop.unpublished.discarded += 1
        }
        if !jobs.isEmpty { shared.withLock { $0.queue.putBack(jobs: jobs) } }
        Self.tell(toTell)
    }

    func checkOwner() {
        if watchesOwner, owner == nil {
            requestStop(.drain)
        }
    }
}
