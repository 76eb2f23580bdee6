import CLongThreadsShims
import Foundation

/// The work path: producers append to the queue; the loop thread drains it in run-loop passes.
extension ThreadCore: RunLoopEngineDelegate {
    // MARK: - Any thread

    /// Queues `item` for the run-loop `modes` (nil: the default mode), or throws `.stopped` once a
    /// stop has begun.
    /// `atFront`: ahead of the waiting items, in any mode (`performAtFrontOfQueue`). With a queue
    /// limit, throws `.queueFull` when full (see `Backpressure`).
    @inline(__always)
    func enqueue(_ item: WorkItem, modes: [RunLoop.Mode]?, atFront: Bool = false) throws(LongThreadError) {
        let engineToWake = try shared.withLock { (state: inout SharedState) throws(LongThreadError) -> RunLoopEngine? in
            guard state.lifecycle.acceptsWork else { throw LongThreadError.stopped }
            var mask = ModeTable.defaultBit
            if let modes {
                mask = try state.mask(for: modes)
            }
            // `hasQueueLimit` is a constant: after `perform` tested it, the compiler drops this check.
            if hasQueueLimit { try state.backpressure?.admit(refusable: !atFront && !item.isJob) }
            let mustWake: Bool
            if atFront {
                mustWake = state.queue.appendUrgent(QueueEntry(item: item, modes: .max))
                urgentPending.store(true, ordering: .relaxed)
            } else {
                mustWake = state.queue.append(QueueEntry(item: item, modes: mask))
            }
            guard mustWake else { return nil }
            if instrument != nil { state.queueNonEmptySince = CLongThreadsShims_monotonicNanoseconds() }
            // Only the producer that wakes the loop touches the engine (a shared refcount).
            return state.engine
        }
        if let engineToWake {
            engineToWake.signal()
            engineToWake.wake()
        }
    }

    // MARK: - Loop thread only

    /// How often one callout refills its batch from the queue before it returns to the run loop.
    /// Refilling the moment the batch runs dry takes one or two items per lock while a producer
    /// posts (the lock's cache line then bounces on every post); one pass of CF in between lets a
    /// batch build up, and lets timers and descriptor sources run under a constant stream of work.
    static let refillsPerCallout = 2

    /// How long one callout runs items before it returns to the run loop (the rest of the batch
    /// waits, in order, for the next pass), checked every `itemsPerClockCheck` items. Bounds how
    /// long timers, descriptor sources and observers wait behind a long batch. A budget in items
    /// instead (256) cost a third of the async throughput: a CF pass every 256 cheap items.
    static let nanosecondsPerCallout: UInt64 = 1_000_000
    static let itemsPerClockCheck = 32

    func engineServiceWork() {
        let eligible = currentEligibility()
        let started = beginCallout()
        defer { endCallout() }
        drainDepth += 1
        defer { drainDepth -= 1 }
        var index = batchHead
        var stopping = false
        var ran = 0
        var totalRun = 0
        var refills = 0
        var firstWaited: UInt64?
        var yielded = false
        drain: while true {
            while index < batch.count {
                if discardRequested.load(ordering: .relaxed) { break drain }
                if urgentPending.load(ordering: .relaxed) { ran += runUrgentItems() }
                if (totalRun + ran + 1) % Self.itemsPerClockCheck == 0,
                   CLongThreadsShims_monotonicNanoseconds() - started >= Self.nanosecondsPerCallout {
                    yielded = true
                    break drain
                }
                if batch[index].modes & eligible != 0 {
                    let item = batch[index].take()
                    advanceBatchHead()
                    run(item)
                    ran += 1
                }
                index += 1
            }
            compactBatch(&index)
            let leftovers = batch.count - batchHead
            let yieldToLoop = refills == Self.refillsPerCallout
            let (gotMore, isStopping, nonEmptySince) = shared.withLock { state in
                publishCounters(into: &state, ran: ran)
                if yieldToLoop, !state.queue.isEmpty { return (false, false, state.queueNonEmptySince) }
                let gotMore = state.queue.moveAll(to: &batch)
                if !gotMore { state.batchPending = leftovers }
                return (gotMore, state.lifecycle.isStopping, state.queueNonEmptySince)
            }
            refills += 1
            totalRun += ran
            ran = 0
            if firstWaited == nil, gotMore, instrument != nil {
                firstWaited = started > nonEmptySince ? started - nonEmptySince : 0
            }
            if !gotMore {
                if yieldToLoop && !isStopping {
                    // More work is queued, but timers, descriptor sources and observers get a pass
                    // first. The consumer stays active, so producers still skip the wake-up; the
                    // signal brings CF back here after one pass, by then with a bigger batch.
                    engine?.signal()
                }
                stopping = isStopping
                break
            }
        }
        if yielded {
            // The batch's rest runs in the next pass; producers still need not wake the loop.
            totalRun += ran
            shared.withLock { publishCounters(into: &$0, ran: ran) }
            engine?.signal()
        }
        let busy = CLongThreadsShims_monotonicNanoseconds() - started
        shared.withLock { $0.busyNanoseconds += busy }
        if let instrument, totalRun > 0 {
            let depth = shared.withLock { $0.queue.count }
            instrument.record(.batch(
                name: name, tasks: totalRun, busy: .nanoseconds(busy),
                waited: .nanoseconds(firstWaited ?? 0), queueDepth: depth
            ))
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

    /// Runs the items posted at the front of the queue, in order; returns how many ran. A discarding
    /// stop that begins meanwhile drops the rest.
    @inline(never)
    private func runUrgentItems() -> Int {
        var urgent = shared.withLock { state in
            urgentPending.store(false, ordering: .relaxed)
            return state.queue.takeUrgent()
        }
        var ran = 0
        for index in urgent.indices {
            if discardRequested.load(ordering: .relaxed) {
                urgent[index].take().discard()
                discardedByLoop += 1
            } else {
                run(urgent[index].take())
                ran += 1
            }
        }
        return ran
    }

    /// Runs one item, exposing its label (if any) to a stall monitor meanwhile.
    @inline(__always)
    private func run(_ item: WorkItem) {
        guard let label = item.label else {
            item.run()
            return
        }
        currentLabel.withLock { $0 = label }
        item.run()
        currentLabel.withLock { $0 = nil }
    }

    func engineDidEnterRun() {
        if !announcedReady {
            announcedReady = true
            instrument?.record(.started(name: name))
            ready.signal()
        }
        let mode = engine?.currentModeName() ?? RunLoop.Mode.default.rawValue
        runModes.append(mode)
        // A run nested inside a task suspends the drain that was running it: producers must
        // signal again. Work already waiting gets a look only if it may run in this mode (or a
        // stop must end the run): a signal with nothing to do still counts as a handled source,
        // which ends a `RunLoop.run(mode:before:)` at once, and a task looping on it would spin.
        let mustLook = shared.withLock { state in
            state.queue.consumerSuspended()
            return hasWork(eligibleIn: mode, state: state)
        }
        if mustLook { engine?.signal() }
    }

    func engineDidExitRun() {
        _ = runModes.popLast()
        // Back in the enclosing run (if any): work for its mode may have arrived meanwhile.
        guard let enclosing = runModes.last else { return }
        if shared.withLock({ hasWork(eligibleIn: enclosing, state: $0) }) { engine?.signal() }
    }

    /// Loop thread, under the lock: whether accepted work not yet run may run in `mode`, or a
    /// stop is under way (which ends every run).
    private func hasWork(eligibleIn mode: String, state: SharedState) -> Bool {
        // Urgent items run in any mode.
        if state.lifecycle.isStopping || !state.queue.urgent.isEmpty { return true }
        let mask = state.modes.eligibility(inModeNamed: mode)
        if mask == 0 { return false }
        // Taken entries have no modes left, so they never match.
        for entry in batch[batchHead...] where entry.modes & mask != 0 { return true }
        return state.queue.entries.contains { $0.modes & mask != 0 }
    }

    func engineDidWake() {
        wakeUps += 1
        instrument?.record(.wokeUp(name: name))
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

    // MARK: - Callouts

    /// Loop thread: a callout (drain, timer, descriptor handler) begins. Returns the time.
    @inline(__always)
    func beginCallout() -> UInt64 {
        let now = CLongThreadsShims_monotonicNanoseconds()
        calloutDepth += 1
        if calloutDepth == 1 {
            calloutStartedAt.store(now, ordering: .sequentiallyConsistent)
            // After the store: a monitor that went idle before it is woken; one that goes idle
            // after it sees the store (StallMonitorState.run).
            if isMonitored.load(ordering: .relaxed) {
                for monitor in monitors.withLock({ $0 }) { monitor.threadBecameBusy() }
            }
        }
        return now
    }

    @inline(__always)
    func endCallout() {
        calloutDepth -= 1
        if calloutDepth == 0 { calloutStartedAt.store(0, ordering: .relaxed) }
    }

    // MARK: - Helpers

    /// Moves the counters the loop thread keeps without the lock into the shared state.
    func publishCounters(into state: inout SharedState, ran: Int) {
        state.tasksRun += ran
        if state.backpressure != nil { state.backpressure?.finished(ran) }
        state.wakeUps += wakeUps
        state.timersFired += timersFired
        wakeUps = 0
        timersFired = 0
    }

    private func currentEligibility() -> ModeTable.Mask {
        guard let mode = engine?.currentModeName() else { return 0 }
        let generation = modesGeneration.load(ordering: .acquiring)
        if let cache = eligibilityCache, cache.mode == mode, generation == seenModesGeneration { return cache.mask }
        let mask = shared.withLock { $0.modes.eligibility(inModeNamed: mode) }
        seenModesGeneration = generation
        // A mode nobody posted in yet may get work later: look it up again next time.
        eligibilityCache = mask == 0 ? nil : (mode, mask)
        return mask
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
            discardedByLoop += 1
        }
    }

    private func checkOwner() {
        if watchesOwner, owner == nil {
            requestStop(.drain)
        }
    }
}
