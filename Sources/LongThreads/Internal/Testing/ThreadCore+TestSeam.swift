import CLongThreadsShims

/// The core's side of the test seam (`TestSeam`): the only code of the core that calls the test
/// kit, and the only code the kit reads the core by.
///
/// The calls are out of line and made only behind `Hints.harnessed`, so the paths of a thread
/// without a test kit keep their size; each forwards one event to the seam. The questions are
/// what the kit's waits and readings need, each under the thread's lock or from an atomic.
extension ThreadCore {
    // MARK: - The core's calls (out of line, behind `Hints.harnessed`)

    /// Creator's thread, `start`: throws the start failure a test asked for.
    @inline(never)
    func testSeamStart() throws(LongThreadError) {
        try testSeam?.threadStarts()
    }

    /// Posting thread, a post of `kind` a test may refuse: the refusal asked for, taken.
    @inline(never)
    func testSeamRefusal(_ kind: PostKind) -> LongThreadError? {
        testSeam?.refusal(forPostOf: kind)
    }

    /// Posting thread, after `enqueue` queued work ahead of the waiting items: a paused thread's
    /// gate runs urgent and own work without a step.
    @inline(never)
    func testSeamPostedAhead() {
        testSeam?.postedAhead()
    }

    /// Any thread, after a stop began: a paused thread's gate opens for it.
    @inline(never)
    func testSeamStopBegan() {
        testSeam?.stopBegan()
    }

    /// Loop thread, a harnessed thread's drain, before it runs the batch entry at `index`: an entry
    /// the test holds (`PostKind.isHeld`) waits at the seam's gate, doing what the gate says
    /// meanwhile. Returns false when a discarding stop began meanwhile.
    @inline(never)
    func passGate(at index: Int, _ pass: inout DrainPass) -> Bool {
        guard let seam = testSeam, loop.batch.entries[index].kind.isHeld else { return true }
        while true {
            switch seam.gate(self, labels: loop.batch.entries[index...].labelsForTest) {
            case .pass: return !discardRequested
            case .serviceTimers:
                if let engine = shared.withLock({ $0.engine }) { engineServiceTimers(engine) }
            case .runUrgentItems: pass.ran += runUrgentItems()
            case .stop(let pending): requestStop(pending)
            }
        }
    }

    /// Loop thread, as `engineServiceTimers` begins: the request it answers.
    @inline(never)
    func testSeamTimersBegin() -> UInt64 {
        testSeam?.timersServiceBegins() ?? 0
    }

    /// Loop thread, as `engineServiceTimers` ends.
    @inline(never)
    func testSeamTimersEnded(_ request: UInt64) {
        testSeam?.timersServiceEnded(request)
    }

    /// Loop thread, as a drain pass ends.
    @inline(never)
    func testSeamDrainPassEnded() {
        testSeam?.drainPassEnded()
    }

    /// Loop thread, once the drain marked the consumer inactive in the middle of its pass (a park,
    /// a nested run).
    @inline(never)
    func testSeamDrainSuspended() {
        testSeam?.drainSuspended()
    }

    /// Loop thread, as it announces its end.
    @inline(never)
    func testSeamLoopExited() {
        testSeam?.loopExited()
    }

    // MARK: - The clock (every thread; nil seam: the real one)

    /// The virtual clock of a thread made by the test kit; nil (every other thread): the real one.
    var virtualClock: VirtualClock? { testSeam?.clock }

    /// Now, in monotonic nanoseconds, on this thread's clock.
    var clockNanoseconds: UInt64 { virtualClock?.nanoseconds ?? CLongThreadsShims_monotonicNanoseconds() }

    /// Now, on this thread's clock.
    var clockNow: ContinuousClock.Instant { virtualClock?.now ?? .now }

    // MARK: - The kit's questions (any thread but the loop's, unless said)

    /// The earliest deadline of the thread's timers not yet due, on its clock.
    var nextTimerDeadlineForTest: UInt64? {
        shared.withLock { $0.timerSchedule.earliestDeadline }
    }

    /// Has the loop run its due timers: signals their source and wakes the loop (out of a park
    /// too: a signal alone leaves a sleeping loop asleep). False when the loop has exited.
    func serviceTimersForTest() -> Bool {
        withLockWaking { (state: inout SharedState, wake: inout Wake) -> Bool in
            guard let engine = state.engine else { return false }
            engine.signalTimers()
            wake.forPass(&state)
            return true
        }
    }

    /// Whether the loop has exited (or never ran).
    var hasExitedForTest: Bool { shared.withLock { $0.engine == nil } }

    /// Whether the loop has nothing queued and is not draining (or has exited).
    var isIdleForTest: Bool {
        shared.withLock { state in
            state.engine == nil || (state.queue.isEmpty && !state.queue.consumerActive)
        }
    }

    /// Whether work posted ahead of the waiting items waits (`Hints.urgent`).
    var urgentWorkWaitsForTest: Bool { hints.load(ordering: .relaxed) & Hints.urgent != 0 }

    /// Whether a stop has begun.
    var stopBegunForTest: Bool { shared.withLock { $0.lifecycle.isStopping } }

    /// The labels of the user's work waiting in the queue (not the batch), in the order it runs.
    var queuedLabelsForTest: [String?] { shared.withLock { $0.queue.labelsForTest } }
}

extension WorkQueue {
    /// The labels of the user's entries, in the order they run (urgent ones first).
    var labelsForTest: [String?] { (urgent.reversed() + entries).labelsForTest }
}

extension Sequence<QueueEntry> {
    /// The labels of the user's entries waiting among these: a test never sees the library's own.
    var labelsForTest: [String?] { filter { !$0.isTaken && !$0.kind.isOwn }.map(\.item.label) }
}
