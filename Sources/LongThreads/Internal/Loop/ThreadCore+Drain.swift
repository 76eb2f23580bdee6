import CLongThreadsShims

/// The drain: one callout of the work source runs the batch, refills it from the queue, waits a
/// little for a blocked caller's next request, and returns to CF within its budget (`DrainPass`).
extension ThreadCore {
    /// How often one callout refills its batch from the queue before it returns to the run loop.
    /// Refilling the moment the batch runs dry takes one or two items per lock while a producer
    /// posts (the lock's cache line then bounces on every post); one pass of CF in between lets a
    /// batch build up, and lets timers and descriptor sources run under a constant stream of work.
    /// A refill that holds a round trip's next request does not count (a pass of CF's every other
    /// round trip cost the pinned round trip 1.5 µs, Benchmarks/README.md): the callout's budget,
    /// which counts its waits, still gives CF its pass.
    static let refillsPerCallout = 2

    /// Loop thread: the work source fired. Runs what the current mode may run until the queue is
    /// empty, a stop, or the callout's budget is spent; at a yield the thread's due timers run
    /// next, before the rest of the work.
    func engineServiceWork(_ engine: RunLoopEngine) {
        let eligible = currentEligibility(engine)
        var pass = DrainPass(started: beginCallout(), eligible: eligible)
        loop.batch.drainDepth += 1
        var index = loop.batch.head
        while runBatch(&pass, from: &index) {
            loop.batch.compact(&index)
            guard refillBatch(&pass) else { break }
        }
        let timersDue = finishPass(&pass, engine)
        checkOwner()
        loop.batch.drainDepth -= 1
        endCallout()
        // In a callout of their own (a timer's work may run the loop nested), after the drain's.
        if timersDue { engineServiceTimers(engine) }
    }

    /// Runs the batch's entries from `index` on, those the pass's modes may run. Returns false
    /// when the pass must end before the batch does (a discarding stop, or the budget spent).
    @inline(__always)
    private func runBatch(_ pass: inout DrainPass, from index: inout Int) -> Bool {
        while index < loop.batch.entries.count {
            // One load for every hint (a stop, urgent work, a monitor, an instrument).
            let hints = self.hints.load(ordering: .relaxed)
            if hints & Hints.discard != 0 {
                pass.end = .discarding
                return false
            }
            if hints & Hints.urgent != 0 { pass.ran += runUrgentItems() }
            if pass.itemCount >= pass.nextClockRead, pass.readClock() {
                pass.end = .yielding
                return false
            }
            if loop.batch.entries[index].modes & pass.eligible != 0 {
                if hints & Hints.harnessed != 0, !passGate(at: index, &pass) {
                    pass.end = .discarding
                    return false
                }
                runEntry(at: index, hints: hints, &pass)
                pass.ran += 1
            }
            index += 1
        }
        return true
    }

    /// Takes the entry at `index` out of the batch and runs it.
    @inline(__always)
    private func runEntry(at index: Int, hints: UInt8, _ pass: inout DrainPass) {
        let postedAt = loop.batch.entries[index].postedAt
        let item = loop.batch.take(at: index)
        if case .waiting(let work) = item, work is BlockingWork { (pass.answeredCaller, pass.batchAnsweredCaller) = (true, true) }
        batchWaiting.store(loop.batch.untaken, ordering: .relaxed)
        // A stamped item runs timed even after its monitor left: it keeps the age of the oldest
        // waiting item true (`statistics`).
        if hints & Hints.timesPosts != 0 || postedAt != 0 || loop.timingItems {
            // Off the untimed path: only a stamped post can settle a missed linger.
            if postedAt != 0, loop.lingerMissedAt != 0 { learnFromMissedLinger(postedAt: postedAt) }
            pass.longestWait = max(pass.longestWait, runTimed(item, postedAt: postedAt))
        } else {
            item.run()
        }
    }

    /// The batch ran dry: publishes the counters and moves what the queue holds into the batch.
    /// A caller answered since the loop last waited may post again at once: the loop first waits
    /// a little for it, spinning (`linger`) or, when the caller shares its CPU, asleep (`park`).
    /// Decided under the lock (`Refill`), carried out after it. Returns whether the pass goes on;
    /// when not, `pass.end` says why.
    @inline(__always)
    private func refillBatch(_ pass: inout DrainPass) -> Bool {
        let yieldToLoop = pass.refills >= Self.refillsPerCallout
        let lingerFor = pass.answeredCaller ? waitPolicy.lingerBudget(&WaitLearning.current.pointee) : 0
        let parkFor = pass.answeredCaller && lingerFor == 0 ? waitPolicy.parkBudget(&WaitLearning.current.pointee) : 0
        let ran = pass.ran
        let refill = shared.withLock { state in
            publishCounters(into: &state, ran: ran)
            if state.countsWakeUps, let engine = state.engine, !engine.countingWakeUps { engine.countWakeUps() }
            return decideRefill(&state, yieldToLoop: yieldToLoop, lingerFor: lingerFor, parkFor: parkFor)
        }
        if !pass.batchAnsweredCaller { pass.refills += 1 }
        pass.batchAnsweredCaller = false
        pass.totalRun += ran
        pass.ran = 0
        switch refill {
        case .run:
            return true
        case .yield(let timersDue):
            // More work is queued, but timers, descriptor sources and observers get a pass first.
            pass.timersDue = timersDue
            pass.end = .yielding
            return false
        case .end(let end):
            pass.end = end
            return false
        case .waitForRequest(let lingerFor, let parkFor, let parkSeen):
            let waited = waitForNextRequest(&pass, lingerFor: lingerFor, parkFor: parkFor, parkSeen: parkSeen)
            guard waited.gotMore else {
                pass.end = waited.isStopping ? .stopping : .drained
                return false
            }
            if waited.budgetSpent, !waited.isStopping {
                // The request runs after CF's pass: a wait must not hold CF back past the budget.
                pass.end = .yielding
                return false
            }
            return true
        }
    }

    /// What a refill does next, decided under the lock (`decideRefill`).
    private enum Refill {
        /// The batch holds more work: the pass runs it.
        case run
        /// More work is queued, but CF gets its pass first; `timersDue`: one of the thread's
        /// timers is due, and runs before that work.
        case yield(timersDue: Bool)
        /// Nothing came: wait for the caller's next request, lingering `lingerFor` ns or else
        /// parked up to `parkFor` ns (`parkSeen`: the bell's value read under the lock).
        case waitForRequest(lingerFor: Int64, parkFor: Int64, parkSeen: UInt32)
        /// Nothing came, and no caller is worth waiting for: the pass ends so.
        case end(DrainPass.End)
    }

    /// Under the lock: moves what the queue holds into the batch, and decides what the refill
    /// does next. After `refillsPerCallout` refills with work still queued, CF's pass comes first
    /// (nobody waits for a request already queued). A wait is marked in the queue here (the
    /// consumer stays active for a linger, or is parked), so that producers skip or ring the bell.
    @inline(__always)
    private func decideRefill(
        _ state: inout SharedState, yieldToLoop: Bool, lingerFor: Int64, parkFor: Int64
    ) -> Refill {
        if yieldToLoop, !state.queue.isEmpty { return .yield(timersDue: timersFellDue(state)) }
        let isStopping = state.lifecycle.isStopping
        var parkFor = parkFor
        var parkSeen: UInt32 = 0
        if parkFor > 0 {
            parkFor = isStopping ? 0 : parkLength(parkFor, state: state)
            // Read under the lock: a ring after it cannot be missed.
            parkSeen = waker.parkSeen
        }
        let before = loop.batch.entries.count
        let gotMore = state.queue.moveAll(
            to: &loop.batch.entries, staysActive: lingerFor > 0 && !isStopping, parks: parkFor > 0)
        if gotMore {
            noteBatchGrew(from: before)
            return .run
        }
        if lingerFor > 0 || parkFor > 0, !isStopping {
            return .waitForRequest(lingerFor: lingerFor, parkFor: parkFor, parkSeen: parkSeen)
        }
        return .end(isStopping ? .stopping : .drained)
    }

    /// Waits for a caller's next request: lingers `lingerFor` ns, or else parks up to `parkFor` ns
    /// (`parkSeen`: the bell's value read under the lock). Returns what the refill after the wait
    /// returns, and whether the callout's budget is spent by then.
    @inline(__always)
    private func waitForNextRequest(
        _ pass: inout DrainPass, lingerFor: Int64, parkFor: Int64, parkSeen: UInt32
    ) -> (gotMore: Bool, isStopping: Bool, budgetSpent: Bool) {
        // Waiting is not work: stall monitors see the loop as in its run loop meanwhile (else
        // the last item would seem to run on through the wait), and the callout then goes on as
        // a task's does after a nested run.
        publishCalloutStart(0)
        pass.answeredCaller = false
        let waitStarted = CLongThreadsShims_monotonicNanoseconds()
        let refill = lingerFor > 0
            ? linger(forNanoseconds: lingerFor, from: waitStarted)
            : park(forNanoseconds: parkFor, seen: parkSeen)
        let resumed = beginCallout(resuming: true)
        if lingerFor <= 0 {
            waitPolicy.parkEnded(won: refill.gotMore, after: Int64(resumed - waitStarted), &WaitLearning.current.pointee)
        }
        let budgetSpent = pass.resumed(at: resumed, after: resumed - waitStarted)
        return (refill.gotMore, refill.isStopping, budgetSpent)
    }

    /// Ends the pass: publishes what it ran and how long it worked, tells an instrument, signals
    /// the work source again at a yield, and ends the run for a stop. Returns whether the thread's
    /// timers are due at a yield: they run next (their CF timer's source may come after the work
    /// source in CF's next pass, and slow items would then hold them back a callout more).
    private func finishPass(_ pass: inout DrainPass, _ engine: RunLoopEngine) -> Bool {
        if pass.end == .yielding {
            if pass.timersDue == nil {
                let ran = pass.ran
                pass.timersDue = shared.withLock { state in
                    publishCounters(into: &state, ran: ran)
                    return timersFellDue(state)
                }
                pass.totalRun += ran
                pass.ran = 0
            }
            // The rest runs in the next pass. The consumer stays active, so producers still skip
            // the wake-up; the signal brings CF back here after one pass.
            engine.signal()
        }
        // Waiting is not work.
        let busy = CLongThreadsShims_monotonicNanoseconds() - pass.started - pass.waited
        shared.withLock { $0.counts.busyNanoseconds += busy }
        // The flag first: binding the optional existential copies it (about 20 instructions).
        if hasInstrument, pass.totalRun > 0, let instrument {
            let depth = shared.withLock { $0.queue.count } + loop.batch.untaken
            instrument.record(.batch(
                name: name, tasks: pass.totalRun, busy: .nanoseconds(busy),
                waited: .nanoseconds(pass.longestWait), queueDepth: depth
            ))
        }
        let hints = self.hints.load(ordering: .relaxed)
        if hints & Hints.discard != 0 {
            discardBatch()
            engine.stopInnermostRun()
        } else if pass.end == .stopping {
            // Draining and nothing this mode may run is left: end this run (the outer loop then
            // drains what waits for other modes, or exits).
            engine.stopInnermostRun()
        }
        if hints & Hints.harnessed != 0 { testSeamDrainPassEnded() }
        return pass.timersDue ?? false
    }

    /// Under the lock: whether one of the thread's timers is due, though its CF timer may not
    /// have fired yet (`engineServiceTimers` runs those the current mode may run).
    private func timersFellDue(_ state: borrowing SharedState) -> Bool {
        if state.timerSchedule.dueCount > 0 { return true }
        guard let next = state.timerSchedule.earliestDeadline else { return false }
        return next <= CLongThreadsShims_monotonicNanoseconds()
    }

    /// Runs the items posted at the front of the queue, newest first; returns how many ran. One at
    /// a time: an item posted at the front while one runs (by it, or by another thread) is the new
    /// head, ahead of the urgent items still waiting. A discarding stop takes those still queued.
    @inline(never)
    func runUrgentItems() -> Int {
        var ran = 0
        while var entry = takeNewestUrgent() {
            let postedAt = entry.postedAt
            let item = entry.take()
            if discardRequested {
                loop.unpublished.discarded += 1
                if item.mustBeTold { Self.tell([item]) }
                break
            }
            if postedAt != 0 || loop.timingItems || isMonitored {
                _ = runTimed(item, postedAt: postedAt)
            } else {
                item.run()
            }
            ran += 1
        }
        return ran
    }

    /// The head of the queue, clearing the urgent hint when it was the last urgent entry.
    private func takeNewestUrgent() -> QueueEntry? {
        shared.withLock { state in
            let entry = state.queue.takeNewestUrgent()
            if state.queue.urgent.isEmpty { hints.bitwiseAnd(~Hints.urgent, ordering: .relaxed) }
            return entry
        }
    }

    /// Runs one item that someone times: a stall monitor (the item is a callout of its own, with
    /// its label) or an instrument (how long it waited). Returns how long it waited since its post.
    private func runTimed(_ item: WorkItem, postedAt: UInt64) -> UInt64 {
        let now = CLongThreadsShims_monotonicNanoseconds()
        var waited: UInt64 = 0
        if postedAt != 0 {
            waited = now > postedAt ? now - postedAt : 0
            batchOldestPostedAt.store(loop.batch.oldestPostedAt, ordering: .relaxed)
            if loop.timingItems { checkDelivery(of: item, waited: waited) }
        }
        guard loop.timingItems || isMonitored else {
            item.run()
            return waited
        }
        loop.timingItems = true
        let outerLabel = loop.itemLabel
        loop.itemLabel = item.label
        if watch.kernelThreadID.load(ordering: .relaxed) == 0 { prepareForStackCapture() }
        publishItemStart(now | Self.timedBit)
        item.run()
        loop.itemLabel = outerLabel
        return waited
    }

    /// Loop thread: `batch` grew from `before` entries (a refill, under the lock).
    func noteBatchGrew(from before: Int) {
        loop.batch.grew(from: before)
        batchWaiting.store(loop.batch.untaken, ordering: .relaxed)
        if before == 0 || batchOldestPostedAt.load(ordering: .relaxed) == 0 {
            batchOldestPostedAt.store(loop.batch.oldestPostedAt, ordering: .relaxed)
        }
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
}

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
        if hints.load(ordering: .relaxed) & Hints.harnessed != 0 { testSeamDrainSuspended() }
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
