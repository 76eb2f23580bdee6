import CLongThreadsShims
import Foundation

/// Something attached to a thread's run loop that a stop must end: observers and descriptor
/// sources, ended when the loop exits. (Timers end when the stop begins: `ThreadCore+Stop`.)
protocol LoopAttachment: AnyObject, Sendable {
    func cancel()
}

/// Observers, descriptor sources and modes: what is added to the loop besides work and timers
/// (`ThreadCore+Timers.swift`).
/// Each is added under the thread's lock while it accepts work, so nothing is ever added to the
/// loop of a thread that has exited (that forms a retain cycle in CF and leaks the loop).
extension ThreadCore {
    /// The targets of this thread's observers (`EngineItem.observer`), made by the first one
    /// (most threads have none). Any thread.
    var observerTargets: ObserverTargets {
        shared.withLock { state in
            if let targets = state.observerTargets { return targets }
            let targets = ObserverTargets()
            state.observerTargets = targets
            return targets
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
        let engine = try shared.withLock { (state: inout SharedState) throws(LongThreadError) -> RunLoopEngine? in
            guard !state.lifecycle.isStopping, state.lifecycle.state != .exited, let engine = state.engine else { return nil }
            _ = try state.mask(for: [mode])
            return engine
        }
        guard let engine else { return false }
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

extension ThreadCore {
    /// Any thread: watches `descriptor` for `events` on this thread's loop (`LongThread.watch`).
    func watch(
        _ descriptor: Int32, for events: DescriptorEvents, modes: [RunLoop.Mode],
        _ handler: @escaping @Sendable (DescriptorEvents) -> Void
    ) throws -> DescriptorSource {
        try withLockWaking { state, wake in
            guard state.lifecycle.acceptsWork, let engine = state.engine else { throw LongThreadError.stopped }
            let watches = state.descriptorWatches ?? DescriptorWatches()
            state.descriptorWatches = watches
            let source = DescriptorSource(
                descriptor: descriptor, events: events, core: self, watches: watches, handler: handler
            )
            _ = try state.mask(for: modes)
            try watches.add(source, modes: modes, engine: engine, core: self)
            state.attachments[ObjectIdentifier(source.handler)] = source.handler
            // A thread with descriptor sources does not park (`parkLength`): its events would wait.
            wake.endingPark(&state)
            return source
        }
    }
}
