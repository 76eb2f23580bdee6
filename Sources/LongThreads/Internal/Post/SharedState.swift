import Foundation

extension ThreadCore {
    /// What the thread's lock guards (`ThreadCore.shared`): the post side's queue and what is added
    /// to the loop, the life side's `Lifecycle`, and the counters the loop publishes. Any thread,
    /// under the lock; nothing here is read without it.
    struct SharedState {
        // Declared in the order the hot paths touch them (a post: lifecycle, queue, modes, engine).
        /// Life side: the state machine and who waits on it (`Lifecycle`).
        var lifecycle = Lifecycle()
        /// Post side: what producers appended and the loop has not taken (`WorkQueue`).
        var queue = WorkQueue()
        /// Post side: the modes work was posted in, as bits (`ModeTable`).
        var modes = ModeTable()
        /// Post side: the engine while the loop lives, for producers to wake and add to; the life
        /// side sets it when the loop opens and clears it when it exits (so nothing is ever added
        /// to the loop of an exited thread). The loop thread keeps no copy: each engine callout
        /// hands it the engine.
        var engine: RunLoopEngine?
        /// Published by the loop: what the thread has done (`ThreadCounts`).
        var counts = ThreadCounts()
        /// Added to the loop: timers not yet fired or cancelled; a stop cancels them. Kept beside
        /// `timerSchedule`: a repeating timer whose callback runs is in neither the heap nor the
        /// due queue meanwhile.
        var timers: [ObjectIdentifier: LongThreadTimer] = [:]
        /// Added to the loop: the same timers by deadline, for the engine's one CF timer.
        var timerSchedule = TimerSchedule()
        /// Added to the loop: observers and descriptor sources; the loop's exit cancels them.
        var attachments: [ObjectIdentifier: any LoopAttachment] = [:]
        /// Added to the loop: the descriptor sources' epoll instances, made by the first watch;
        /// the loop's exit takes them out and closes them (`finishExit`).
        var descriptorWatches: DescriptorWatches?
        /// Whether the loop counts its wake-ups: from the start with an owner or an instrument,
        /// otherwise once `statistics` was read (the loop then adds its observer at its next drain).
        var countsWakeUps = false
        /// Post side: the backlog and the producers waiting for room, with `Options.queueLimit` only.
        var backpressure: Backpressure?
        /// Post side: work waiting for a deadline, by deadline and modes (`perform(at:)`, `run(at:)`).
        var deadlines: [DeadlineKey: DeadlineBucket] = [:]
        /// Added to the loop: the targets of its observers, made by the first one (`observerTargets`).
        var observerTargets: ObserverTargets?
    }
}

extension ThreadCore.SharedState {
    /// The mask for `modes`, registering each new mode with the loop (CF creates it then, which
    /// may throw `.outOfResources`). Only while the loop lives: the caller checked `engine`.
    mutating func mask(for modes: [RunLoop.Mode]) throws(LongThreadError) -> ModeTable.Mask {
        let engine = self.engine
        return try self.modes.mask(for: modes) { (name) throws(LongThreadError) in try engine?.add(modeNamed: name) }
    }

    /// The bit of one mode, registering it with the loop the first time (see `mask(for:)`).
    mutating func bit(for mode: RunLoop.Mode) throws(LongThreadError) -> ModeTable.Mask {
        let engine = self.engine
        return try self.modes.bit(for: mode) { (name) throws(LongThreadError) in try engine?.add(modeNamed: name) }
    }
}
