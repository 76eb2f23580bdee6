import Foundation

/// The work path: producers append to the queue; the loop thread drains it in run-loop passes.
extension ThreadCore: RunLoopEngineDelegate {
    // MARK: - Any thread

    /// Queues `item` for the run-loop `modes`, or throws `.stopped` once a stop has begun.
    @inline(__always)
    func enqueue(_ item: WorkItem, modes: [RunLoop.Mode]) throws(LongThreadError) {
        let engineToWake = try shared.withLock { (state: inout SharedState) throws(LongThreadError) -> RunLoopEngine? in
            guard state.lifecycle.acceptsWork else { throw LongThreadError.stopped }
            let engine = state.engine
            let mask = try state.modes.mask(for: modes) { engine?.add(modeNamed: $0) }
            return state.queue.append(QueueEntry(item: item, modes: mask)) ? engine : nil
        }
        if let engineToWake {
            engineToWake.signal()
            engineToWake.wake()
        }
    }

    // MARK: - Loop thread only

    func engineServiceWork() {
        let eligible = currentEligibility()
        drainDepth += 1
        defer { drainDepth -= 1 }
        var index = batchHead
        var stopping = false
        var ran = 0
        drain: while true {
            while index < batch.count {
                if discardRequested.load(ordering: .relaxed) { break drain }
                if batch[index].modes & eligible != 0 {
                    let item = batch[index].take()
                    advanceBatchHead()
                    item.run()
                    ran += 1
                }
                index += 1
            }
            compactBatch(&index)
            let leftovers = batch.count - batchHead
            let (gotMore, isStopping) = shared.withLock { state in
                state.tasksRun += ran
                let gotMore = state.queue.moveAll(to: &batch)
                if !gotMore { state.batchPending = leftovers }
                return (gotMore, state.lifecycle.isStopping)
            }
            ran = 0
            if !gotMore {
                stopping = isStopping
                break
            }
        }
        if discardRequested.load(ordering: .relaxed) {
            discardBatch()
            engine?.stopInnermostRun()
        } else if stopping {
            // Draining and nothing this mode may run is left: end this run (the outer loop then
            // drains what waits for other modes, or exits).
            engine?.stopInnermostRun()
        }
        checkOwner()
    }

    func engineDidEnterRun() {
        if !announcedReady {
            announcedReady = true
            ready.signal()
        }
        // A run nested inside a task suspends the drain that was running it: producers must
        // signal again, and work waiting for this mode gets a look.
        shared.withLock { $0.queue.consumerSuspended() }
        engine?.signal()
    }

    func engineDidExitRun() {
        // Back in the enclosing run (if any): work for its mode may have been skipped meanwhile.
        engine?.signal()
    }

    func engineDidWake() {
        checkOwner()
    }

    /// Runs the loop in the default mode until a stop, then drains work waiting for other modes.
    func runUntilStopped(_ engine: RunLoopEngine) {
        // A task may end a run (CFRunLoopStop) or run the loop nested; only a stop ends the loop.
        while !shared.withLock({ $0.lifecycle.isStopping }) {
            engine.runDefaultMode()
        }
        while !discardRequested.load(ordering: .relaxed) {
            let mode: String? = shared.withLock { state in
                let first = batch[batchHead...].first { !$0.isTaken } ?? state.queue.entries.first
                return first.map { state.modes.drainMode(for: $0.modes) }
            }
            guard let mode else { break }
            engine.run(modeNamed: mode)
        }
    }

    // MARK: - Helpers

    private func currentEligibility() -> ModeTable.Mask {
        guard let mode = engine?.currentModeName() else { return 0 }
        if let cache = eligibilityCache, cache.mode == mode { return cache.mask }
        let mask = shared.withLock { $0.modes.eligibility(inModeNamed: mode) }
        // A mode nobody posted in yet may get work later: look it up again next time.
        eligibilityCache = mask == 0 ? nil : (mode, mask)
        return mask
    }

    /// Invalidates the cached eligibility (the common set changed). Loop thread only.
    func modesChanged() {
        eligibilityCache = nil
    }

    @inline(__always)
    private func advanceBatchHead() {
        while batchHead < batch.count, batch[batchHead].isTaken { batchHead += 1 }
    }

    /// Drops run entries from `batch` when no outer drain holds an index into it.
    private func compactBatch(_ index: inout Int) {
        guard drainDepth == 1 else { return }
        if batchHead == batch.count {
            batch.removeAll(keepingCapacity: true)
            batchHead = 0
            index = 0
        } else if batch.count >= 1024, batchHead > batch.count / 2 || batch.count > 4096 {
            // Entries waiting for another mode stay; taken slots between them go.
            batch.removeAll { $0.isTaken }
            batchHead = 0
            index = batch.count
        }
    }

    /// Discards everything in the batch, telling each waiter.
    func discardBatch() {
        var dropped: [QueueEntry] = []
        swap(&dropped, &batch)
        batchHead = 0
        for index in dropped.indices where !dropped[index].isTaken {
            dropped[index].take().discard()
        }
    }

    private func checkOwner() {
        if watchesOwner, owner == nil {
            requestStop(.drain)
        }
    }
}
