import Foundation

/// The loop side: the run of the loop until a stop, what the engine reports of its runs and
/// wake-ups, and the bookkeeping the drain shares with them. Loop thread only, but where a
/// function says otherwise.
extension ThreadCore: RunLoopEngineDelegate {
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

    var holdsEngineLock: Bool { shared.isHeldByCurrentThread }

    func engineDidWake() {
        loop.unpublished.wakeUps += 1
        if hasInstrument { instrument?.record(.wokeUp(name: name)) }
        checkOwner()
    }

    /// Loop thread, once the loop has stopped (after the drain, or at once after a discarding
    /// stop), before the bound values are destroyed and `tearDown` runs: runs the jobs still
    /// queued, in order, and those they bring (a pinned actor calling another, or itself), round
    /// after round, until a look finds none. That look, under the lock, closes the door: a job
    /// enqueued after it cannot run on the thread (`jobAfterEnd`).
    func runRemainingJobs() {
        var ran = 0
        while true {
            let jobs = shared.withLock { state -> [QueueEntry] in
                publishCounters(into: &state, ran: ran)
                let jobs = state.queue.removeJobs()
                if jobs.isEmpty { state.lifecycle.lastJobRan() }
                return jobs
            }
            if jobs.isEmpty { return }
            for entry in jobs { runCallout { entry.item.run() } }
            ran = jobs.count
        }
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
    func checkOwner() {
        if watchesOwner, owner == nil {
            requestStop(.drain)
        }
    }
}
