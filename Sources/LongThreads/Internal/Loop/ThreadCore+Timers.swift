import CLongThreadsShims
import Foundation

/// The thread's timers (`LongThreadTimer`, delayed and deadline work): one schedule by deadline
/// under the thread's lock (`TimerSchedule`), one CF timer armed for its earliest deadline, and
/// their callouts on the loop thread. A timer is added under the lock while the thread accepts
/// work, as everything added to the loop is (`ThreadCore+Attachments.swift`).
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
    func engineServiceTimers(_ engine: RunLoopEngine) {
        let eligible = currentEligibility(engine)
        let tested = hints.load(ordering: .relaxed) & Hints.harnessed != 0
        let request = tested ? testSeamTimersBegin() : 0
        defer { if tested { testSeamTimersEnded(request) } }
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
}
