import CLongThreadsShims
import Foundation

/// The work path: producers append to the queue; the loop thread drains it in run-loop passes
/// (`ThreadCore+Drain.swift`).
extension ThreadCore: RunLoopEngineDelegate {
    // MARK: - Any thread

    /// Queues `item` for the run-loop `modes` (nil: the default mode), or throws `.stopped` once a
    /// stop has begun.
    /// `kind`: who posts (`PostKind`); urgent and own posts go ahead of the waiting items, in any
    /// mode (`performAtFrontOfQueue`). The library's own posts go through `enqueueOwn`. With a
    /// queue limit, throws `.queueFull` when full (see `Backpressure`).
    /// `item` is made under the lock, straight into its queue entry: made outside, it was copied
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
        if kind.goesFirst, hints.load(ordering: .relaxed) & Hints.harnessed != 0 { noticeForTest() }
        return foundDraining
    }

    /// Any thread: the library's own post (`PostKind.own`): `work` runs on the thread ahead of the
    /// waiting items, in any mode; no queue limit and no test (LongThreadsTestKit) refuses or holds
    /// it. Every post the library makes for itself ahead of the queue goes through here (one in
    /// the thread's order, a bound value's explicit release, posts `PostKind.ownInOrder` through
    /// `enqueue`). Returns false once a stop
    /// has begun (the only refusal): the caller's work must then be done by the thread's end.
    @discardableResult
    func enqueueOwn(_ work: @escaping @Sendable () -> Void) -> Bool {
        (try? enqueue(.fireAndForget(work), modes: nil, kind: .own)) != nil
    }

    // MARK: - Loop thread only

    /// Loop thread, timing: the item (or resumed task) labelled `itemLabel` starts at `start`.
    /// A monitor that reported the previous item may have gone idle: this start wakes it, or the
    /// next slow item of the same drain would go unreported.
    func publishItemStart(_ start: UInt64) {
        if let itemLabel = loop.itemLabel { watch.runningLabel.withLock { $0 = (itemLabel, start) } }
        publishCalloutStart(start)
        // After the start's store (sequentially consistent, as the monitor's flag store, then its
        // load of the start): either this load sees the flag, or the monitor sees this start.
        if watch.wakeMonitorsAtNextItem.load(ordering: .sequentiallyConsistent) { wakeIdleMonitors() }
    }

    /// Loop thread: wakes the monitors that sleep with nothing to time (`threadBecameBusy`).
    @inline(never)
    private func wakeIdleMonitors() {
        watch.wakeMonitorsAtNextItem.store(false, ordering: .sequentiallyConsistent)
        watch.monitors.withLock { monitors in
            for monitor in monitors { monitor.threadBecameBusy() }
        }
    }

    /// Loop thread: moves the callout start. While a monitor samples this thread's stack (it saw
    /// the old start and is about to signal, or has signalled), waits here, in the library's own
    /// code, until the capture is over: the signal never interrupts the next callout. The two
    /// sequentially consistent accesses pair with the monitor's in `StallMonitorState.capture`.
    @inline(__always)
    func publishCalloutStart(_ start: UInt64) {
        watch.calloutStartedAt.store(start, ordering: .sequentiallyConsistent)
        if watch.stackSampleRequested.load(ordering: .sequentiallyConsistent) {
            while watch.stackSampleRequested.load(ordering: .sequentiallyConsistent) { sched_yield() }
        }
    }

    /// Loop thread: `batch` grew from `before` entries (a refill, under the lock).
    func noteBatchGrew(from before: Int) {
        loop.batch.grew(from: before)
        batchWaiting.store(loop.batch.untaken, ordering: .relaxed)
        if before == 0 || batchOldestPostedAt.load(ordering: .relaxed) == 0 {
            batchOldestPostedAt.store(loop.batch.oldestPostedAt, ordering: .relaxed)
        }
    }

    func engineDidEnterRun() {
        let mode = loop.engine?.currentModeName() ?? RunLoop.Mode.default.rawValue
        loop.runModes.append(mode)
        // A run nested inside a task suspends the drain that was running it: producers must
        // wake it again. Work already waiting gets a look only if it may run in this mode (or a
        // stop must end the run): a signal with nothing to do still counts as a handled source,
        // which ends a `RunLoop.run(mode:before:)` at once, and a task looping on it would spin.
        let (mustLook, timersDue) = shared.withLock { state in
            state.queue.consumerSuspended()
            return (hasWork(eligibleIn: mode, state: state), hasDueTimers(eligibleIn: mode, state: state))
        }
        if mustLook { loop.engine?.signal() }
        if timersDue { loop.engine?.signalTimers() }
        // The task's callout pauses: the loop turns again (a monitor sees an idle thread).
        if loop.calloutDepth > 0 { publishCalloutStart(0) }
    }

    func engineDidExitRun() {
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
                if mustLook { loop.engine?.signal() }
                if timersDue { loop.engine?.signalTimers() }
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

    /// Loop thread, at the end of a callout: signals the looks deferred for it (`engineDidExitRun`).
    @inline(never)
    private func takeDeferredLooks() {
        while let last = loop.deferredLooks.last, last.depth > loop.calloutDepth {
            loop.deferredLooks.removeLast()
            if last.work { loop.engine?.signal() }
            if last.timers { loop.engine?.signalTimers() }
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

    // MARK: - Callouts

    /// The low bit of `calloutStartedAt` that says the loop times each item (see there).
    static let timedBit: UInt64 = 1

    /// Loop thread: a callout (drain, timer, descriptor handler) begins, or (`resuming`) a task
    /// whose nested run returned goes on. Returns the time.
    @discardableResult
    @inline(__always)
    func beginCallout(resuming: Bool = false) -> UInt64 {
        let now = CLongThreadsShims_monotonicNanoseconds()
        if now >= loop.settleInAt { settleIn() }
        if !resuming { loop.calloutDepth += 1 }
        loop.timingItems = isMonitored
        guard loop.timingItems else {
            publishCalloutStart(max(now & ~Self.timedBit, 2))
            return now
        }
        if watch.kernelThreadID.load(ordering: .relaxed) == 0 { prepareForStackCapture() }
        if resuming {
            publishItemStart(now | Self.timedBit)
        } else {
            publishCalloutStart(now | Self.timedBit)
        }
        // After the store: a monitor that went idle before it is woken; one that goes idle after
        // it sees the store (StallMonitorState.run).
        // Inside the lock: a monitor unwatching meanwhile is released under it, not after.
        watch.monitors.withLock { monitors in
            for monitor in monitors { monitor.threadBecameBusy() }
        }
        return now
    }

    /// Loop thread, at its first timed callout or item, before its start is published: what a
    /// monitor's stack capture needs (the capture signal unblocked, the kernel thread id). Only
    /// captures of timed callouts are made, and a monitor that saw a timed start also sees this
    /// (the start's store is sequentially consistent); a thread no monitor watches pays neither
    /// system call.
    @inline(never)
    func prepareForStackCapture() {
        CLongThreadsShims_stackCaptureUnblockHere()
        watch.kernelThreadID.store(CLongThreadsShims_gettid(), ordering: .relaxed)
    }

    /// How long a thread lives before its first callout settles it in (`settleIn`).
    static let settleInDelayNanoseconds: UInt64 = 1_000_000

    /// Loop thread, at the first callout once the thread has lived `settleInDelayNanoseconds`:
    /// what pays off only over a long life. Requests `Options.schedulerSlice` (two system calls,
    /// `sched_getattr` and `sched_setattr`, ~4 µs of a new thread's life with CPU hogs beside it)
    /// and installs the engine's wake-up port (`RunLoopEngine.installWakePort`: ~6 µs of a life
    /// with hogs). A thread that ends within a millisecond gains nothing from either.
    @inline(never)
    func settleIn() {
        loop.settleInAt = .max
        PosixThread.requestSliceForCurrentThread(options.schedulerSlice)
        shared.withLock { state in
            // Not once a stop began: the loop is about to exit.
            if !state.lifecycle.isStopping { loop.engine?.installWakePort() }
        }
    }

    /// Whether the loop wakes through its own port (`RunLoopEngine.installWakePort`). Any thread.
    var hasWakePort: Bool { shared.withLock { $0.engine?.hasWakePort ?? false } }

    /// Loop thread: a callout ends; the loop turns again (at whatever depth it runs).
    @inline(__always)
    func endCallout() {
        loop.calloutDepth -= 1
        publishCalloutStart(0)
        if !loop.deferredLooks.isEmpty { takeDeferredLooks() }
    }

    // MARK: - Helpers

    /// Moves the counters the loop thread keeps without the lock into the shared state.
    func publishCounters(into state: inout SharedState, ran: Int) {
        state.counts.tasksRun += ran
        if state.backpressure != nil { state.backpressure?.finished(ran) }
        state.counts.take(&loop.unpublished)
    }

    func currentEligibility() -> ModeTable.Mask {
        guard let mode = loop.engine?.currentModeName() else { return 0 }
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
