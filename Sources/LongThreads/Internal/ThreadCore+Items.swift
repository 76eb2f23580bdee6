import CLongThreadsShims
import Foundation

/// Something attached to a thread's run loop that a stop must end: observers and descriptor
/// sources (ended when the loop exits) and timers (ended when the stop begins).
protocol LoopAttachment: AnyObject, Sendable {
    func cancel()
}

extension LongThreadTimer: LoopAttachment {}

/// Timers, observers, descriptor sources and modes: everything added to the loop besides work.
/// Each is added under the thread's lock while it accepts work, so nothing is ever added to the
/// loop of a thread that has exited (that forms a retain cycle in CF and leaks the loop).
extension ThreadCore {
    func schedule(_ timer: LongThreadTimer, after delay: Duration, modes: [RunLoop.Mode]) throws(LongThreadError) {
        let item = EngineItem.timer(after: delay, interval: timer.interval) { [weak self, weak timer] in
            guard let timer else { return }
            if let self { self.runCallout { timer.fire() } } else { timer.fire() }
        }
        guard timer.attach(item) else { return } // cancelled already (run(after:) racing its task)
        try shared.withLock { (state: inout SharedState) throws(LongThreadError) in
            guard state.lifecycle.acceptsWork, let engine = state.engine else { throw LongThreadError.stopped }
            _ = try state.mask(for: modes)
            // A cancel after `attach` either comes before this check, or invalidates the CF timer
            // (CF then skips or undoes the add) and removes the entry once this lock is released.
            guard !timer.isCancelled else { return }
            engine.add(item, modes: modes)
            state.timers[ObjectIdentifier(timer)] = timer
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
        timersFired += 1
        if ended { timerEnded(timer) }
    }

    func timerEnded(_ timer: LongThreadTimer) {
        _ = shared.withLock { $0.timers.removeValue(forKey: ObjectIdentifier(timer)) }
    }

    func register(_ attachment: some LoopAttachment, item: EngineItem, modes: [RunLoop.Mode]) throws(LongThreadError) {
        try shared.withLock { (state: inout SharedState) throws(LongThreadError) in
            guard state.lifecycle.acceptsWork, let engine = state.engine else { throw LongThreadError.stopped }
            _ = try state.mask(for: modes)
            engine.add(item, modes: modes)
            state.attachments[ObjectIdentifier(attachment)] = attachment
        }
    }

    func itemEnded(_ attachment: some LoopAttachment) {
        _ = shared.withLock { $0.attachments.removeValue(forKey: ObjectIdentifier(attachment)) }
    }

    func addCommonMode(_ mode: RunLoop.Mode) throws(LongThreadError) {
        // CF's common-modes marker as a common mode makes CFRunLoopAddCommonMode recurse without end.
        if mode == .common { throw .invalidMode(mode) }
        try shared.withLock { (state: inout SharedState) throws(LongThreadError) in
            guard state.lifecycle.acceptsWork, let engine = state.engine else { throw LongThreadError.stopped }
            let bit = try state.bit(for: mode)
            state.modes.addToCommonSet(bit)
            engine.addCommonMode(mode)
        }
        // The loop thread re-reads its cached eligibility at its next drain.
        modesGeneration.add(1, ordering: .releasing)
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
        guard registered, let engine else { return false }
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
