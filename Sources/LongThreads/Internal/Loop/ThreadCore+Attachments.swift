import CLongThreadsShims
import Foundation

/// Something attached to a thread's run loop that a stop must end: observers and descriptor
/// sources, ended when the loop exits. (Timers end when the stop begins: `ThreadCore+Stop`.)
protocol LoopAttachment: AnyObject, Sendable {
    func cancel()
}

/// Timers, observers, descriptor sources and modes: everything added to the loop besides work.
/// Each is added under the thread's lock while it accepts work, so nothing is ever added to the
/// loop of a thread that has exited (that forms a retain cycle in CF and leaks the loop).
extension ThreadCore {
    /// Any thread: adds `timer` to the schedule for `delay` from now. A delay below zero is a
    /// deadline already passed, kept as such: timers fire in deadline order, and one whose deadline
    /// passed longer ago goes first (`perform(at:)` with past instants, as NIO and Android order them).
    /// `kind`: `.own` for a timer the library schedules for itself (a deadline's bucket).
    func schedule(_ timer: LongThreadTimer, after delay: Duration, modes: [RunLoop.Mode], kind: PostKind = .queued) throws(LongThreadError) {
        if let refusal = refusalForTest(kind) { throw refusal }
        let deadline = Self.monotonicDeadline(after: delay, now: clockNanoseconds)
        try withLockWaking { (state: inout SharedState, wake: inout Wake) throws(LongThreadError) in
            guard state.lifecycle.acceptsWork, let engine = state.engine else { throw LongThreadError.stopped }
            let mask = try state.mask(for: modes)
            // A cancel either comes before this check, or its `timerEnded` waits for this lock and
            // then takes the timer out again (`run(after:)`'s task cancelled while it schedules).
            guard !timer.isCancelled else { return }
            state.timers[ObjectIdentifier(timer)] = timer
            state.timerSchedule.insert(timer, deadline: deadline, modes: mask)
            armTimers(engine, state: &state)
            // A park ends at the thread's next deadline, as it was before this one (`parkLength`).
            wake.endingPark(&state)
        }
    }

    /// Monotonic nanoseconds (`CLongThreadsShims_monotonicNanoseconds`) `delay` from now, earlier
    /// than now for a negative delay (never below 0).
    static func monotonicDeadline(after delay: Duration, now: UInt64) -> UInt64 {
        guard delay < .zero else { return now &+ UInt64(delay.clampedNanoseconds) }
        let past = UInt64((.zero - delay).clampedNanoseconds)
        return now > past ? now - past : 0
    }

    /// Under the lock: arms the engine's CF timer for the earliest pending deadline, unless it is
    /// armed for that or earlier already (a cancel leaves it armed: it fires once for nothing).
    /// On a virtual clock the CF timer is made but never armed: `VirtualClock.advance` runs the timers.
    private func armTimers(_ engine: RunLoopEngine?, state: inout SharedState) {
        guard let engine, let next = state.timerSchedule.earliestDeadline, next < state.timerSchedule.armedFor else { return }
        state.timerSchedule.armedFor = next
        engine.armTimers(for: virtualClock == nil ? next : .max)
    }

    /// Loop thread: the timer source fired. Runs, in the order they fell due, each due timer that may
    /// run in the current mode; the others wait in the schedule for a pass in one of their modes.
    /// First arms the CF timer for the next deadline still pending.
    func engineServiceTimers() {
        let eligible = currentEligibility()
        let harness = options.harness
        let request = harness?.timersServiceBegins()
        defer { if let harness, let request { harness.timersServiced(request) } }
        let now = clockNanoseconds
        // Timers scheduled from here on (a zero delay included) wait for the next pass.
        shared.withLock { state in
            state.timerSchedule.moveDue(upTo: now)
            // The CF timer fired, or will fire for a deadline now taken: either way it is spent.
            // Armed again before any timer runs: one whose work runs the loop nested must not
            // hold back the next deadline.
            state.timerSchedule.armedFor = .max
            armTimers(state.engine, state: &state)
        }
        // One at a time: a timer's work may run the loop nested, and that run takes due timers too.
        while let entry = shared.withLock({ $0.timerSchedule.takeDue(eligibleIn: eligible) }) {
            runCallout { entry.timer.fire() }
            if let interval = entry.timer.interval { reschedule(entry, every: interval) }
        }
    }

    /// Loop thread: puts a repeating timer back for the first fire time of its grid after now (fire
    /// times missed while its callback or other work ran are skipped, not bunched).
    private func reschedule(_ entry: TimerSchedule.Entry, every interval: Duration) {
        let step = UInt64(max(interval.clampedNanoseconds, 1))
        let now = clockNanoseconds
        let missed = now >= entry.deadline ? (now - entry.deadline) / step + 1 : 1
        let next = entry.deadline &+ missed &* step
        shared.withLock { state in
            // Under the lock: a cancel that ended the timer before this check took it out of
            // `timers` already; one after it waits for the lock and takes the timer out again.
            guard !entry.timer.isCancelled, state.timers[ObjectIdentifier(entry.timer)] != nil else { return }
            state.timerSchedule.insert(entry.timer, deadline: next, modes: entry.modes)
            armTimers(state.engine, state: &state)
        }
    }

    /// Loop thread: a timer's or a descriptor source's callout, tracked for stall monitors.
    func runCallout(_ body: () -> Void) {
        _ = beginCallout()
        defer { endCallout() }
        body()
    }

    /// Loop thread: a timer fired; a one-shot timer has ended.
    func timerFired(_ timer: LongThreadTimer, ended: Bool) {
        loop.unpublished.timersFired += 1
        if ended { timerEnded(timer) }
    }

    func timerEnded(_ timer: LongThreadTimer) {
        _ = shared.withLock { state in
            state.timerSchedule.remove(timer)
            return state.timers.removeValue(forKey: ObjectIdentifier(timer))
        }
    }

    func register(_ attachment: some LoopAttachment, item: EngineItem, modes: [RunLoop.Mode]) throws(LongThreadError) {
        try withLockWaking { (state: inout SharedState, wake: inout Wake) throws(LongThreadError) in
            guard state.lifecycle.acceptsWork, let engine = state.engine else { throw LongThreadError.stopped }
            _ = try state.mask(for: modes)
            engine.add(item, modes: modes)
            state.attachments[ObjectIdentifier(attachment)] = attachment
            // A thread with descriptor sources or observers does not park (`parkLength`).
            wake.endingPark(&state)
        }
    }

    func itemEnded(_ attachment: some LoopAttachment) {
        _ = shared.withLock { $0.attachments.removeValue(forKey: ObjectIdentifier(attachment)) }
    }

    func addCommonMode(_ mode: RunLoop.Mode) throws(LongThreadError) {
        // CF's common-modes marker as a common mode makes CFRunLoopAddCommonMode recurse without end.
        if mode == .common { throw .invalidMode(mode) }
        let engine = try shared.withLock { (state: inout SharedState) throws(LongThreadError) -> RunLoopEngine in
            guard state.lifecycle.acceptsWork, let engine = state.engine else { throw LongThreadError.stopped }
            let bit = try state.bit(for: mode)
            state.modes.addToCommonSet(bit)
            engine.addCommonMode(mode)
            return engine
        }
        // The loop thread re-reads its cached eligibility at its next drain.
        modesGeneration.add(1, ordering: .releasing)
        // `.common` work and timers waiting may now run in `mode`, which the loop may be running
        // (a nested run): nothing else would give them a look before the next post or deadline.
        // After the bump, so that the look sees the new eligibility. The wake-up looks at work.
        withLockWaking { state, wake in
            engine.signalTimers()
            wake.forPass(&state)
        }
    }

    /// Loop thread only (checked by the caller).
    func runNested(
        in mode: RunLoop.Mode, until deadline: ContinuousClock.Instant, while condition: () -> Bool
    ) throws(LongThreadError) -> Bool {
        // CF refuses to run its common-modes marker ("invalid mode") and returns at once, so a
        // run in it would spin until the deadline's check.
        if mode == .common { throw .invalidMode(mode) }
        let registered = try shared.withLock { (state: inout SharedState) throws(LongThreadError) -> Bool in
            guard !state.lifecycle.isStopping, state.lifecycle.state != .exited, state.engine != nil else { return false }
            _ = try state.mask(for: [mode])
            return true
        }
        guard registered, let engine = loop.engine else { return false }
        let left = ContinuousClock.now.duration(to: deadline)
        if left <= .zero { return !condition() }
        return engine.runNested(
            modeNamed: RunLoopEngine.cfMode(mode),
            deadline: left,
            shouldReturn: { !condition() },
            stopped: { shared.withLock { $0.lifecycle.isStopping } }
        )
    }
}
