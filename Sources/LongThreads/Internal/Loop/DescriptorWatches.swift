import CLongThreadsShims
import Foundation
import Glibc
import Synchronization

/// The descriptor sources of one thread, and the epoll instances they share: one per set of
/// modes, each a version-1 source in those modes. Kept under the thread's lock
/// (`SharedState.descriptorWatches`), made by the first watch; the loop's exit tears it down.
///
/// Holds each source until it is cancelled or the thread exits, so a dropped handle keeps
/// working. Keyed by descriptor: one watch per descriptor per thread.
final class DescriptorWatches: @unchecked Sendable {
    private struct Hub {
        let port: Int32
        let item: EngineItem
    }

    private struct Watch {
        let source: DescriptorSource
        let port: Int32
    }

    private struct State {
        var hubs: [[String]: Hub] = [:]
        var watches: [Int32: Watch] = [:]
    }

    private let state = Locked(State())

    /// How many epoll instances the thread has (tests, benchmarks).
    var hubCount: Int { state.withLock { $0.hubs.count } }

    /// Registers `source` in the epoll of its modes, making that epoll first if needed. Any thread,
    /// under the thread's lock while its loop lives.
    func add(_ source: DescriptorSource, modes: [RunLoop.Mode], engine: RunLoopEngine,
             core: ThreadCore) throws(DescriptorSource.Error) {
        try state.withLock { (state: inout State) throws(DescriptorSource.Error) in
            if state.watches[source.descriptor] != nil { throw .invalidDescriptor(errno: EEXIST) }
            let key = Set(modes.map(\.rawValue)).sorted()
            let hub: Hub
            if let existing = state.hubs[key] {
                hub = existing
            } else {
                hub = try makeHub(modes: modes, engine: engine, core: core)
                state.hubs[key] = hub
            }
            // Added even when it waits for neither readable nor writable: epoll reports hang-up
            // and error to every entry, and a source outside it would hear nothing.
            try Self.check(CLongThreadsShims_epollAdd(hub.port, source.descriptor, source.interest))
            state.watches[source.descriptor] = Watch(source: source, port: hub.port)
        }
    }

    /// Sets `source`'s events to `change` of them and tells its epoll. Any thread.
    ///
    /// The entry stays in the epoll whatever the events, so hang-up and error reach the source.
    func change(_ source: DescriptorSource,
                _ change: (DescriptorEvents) -> DescriptorEvents) throws(DescriptorSource.Error) {
        try state.withLock { (state: inout State) throws(DescriptorSource.Error) in
            guard let watch = state.watches[source.descriptor], watch.source === source, !source.isCancelled else {
                throw .cancelled
            }
            let old = source.interest
            let new = change(DescriptorEvents(rawValue: old)).rawValue & 3
            if new == old { return }
            // Also arms an entry disarmed for a callout in progress: harmless, as only this
            // thread collects, after that callout.
            try Self.check(CLongThreadsShims_epollRearm(watch.port, source.descriptor, new))
            source.setInterest(new)
        }
    }

    private static func check(_ rc: Int32) throws(DescriptorSource.Error) {
        switch rc {
        case 0: return
        case ENOMEM, ENOSPC: throw .cannotCreate(errno: rc)
        default: throw .invalidDescriptor(errno: rc)
        }
    }

    /// Takes `source` out of its epoll and releases it. Any thread. Idempotent.
    func remove(_ source: DescriptorSource) {
        let removed = state.withLock { state -> Watch? in
            guard let watch = state.watches[source.descriptor], watch.source === source else { return nil }
            CLongThreadsShims_epollRemove(watch.port, source.descriptor)
            return state.watches.removeValue(forKey: source.descriptor)
        }
        _ = removed // released here, outside the lock
    }

    /// Loop thread, when the loop exits: takes the epoll instances out of every mode (CF closes
    /// each when it frees its source) and releases every source.
    func tearDown() {
        let (hubs, watches) = state.withLock { state in
            defer { state = State() }
            return (state.hubs, state.watches)
        }
        for hub in hubs.values { hub.item.invalidate() }
        _ = watches
    }

    private func makeHub(modes: [RunLoop.Mode], engine: RunLoopEngine,
                         core: ThreadCore) throws(DescriptorSource.Error) -> Hub {
        // Under the headroom's lock (`DescriptorHeadroom`): made outside it, this descriptor could
        // take a slot another thread's probe had just freed for CF, which then halts the process.
        let port: Int32
        do {
            port = try DescriptorHeadroom.withDescriptors(1) { CLongThreadsShims_epollCreate() }
        } catch {
            // The probe throws only `.outOfResources`.
            guard case .outOfResources(let errno) = error else { throw .cannotCreate(errno: EMFILE) }
            throw .cannotCreate(errno: errno)
        }
        if port < 0 { throw .cannotCreate(errno: -port) }
        let item = EngineItem.source(port: port, target: { [weak self, weak core] in
            self?.dispatch(port: port, core: core)
        }, onRelease: { close(port) })
        engine.add(item, modes: modes)
        return Hub(port: port, item: item)
    }

    /// Loop thread: the epoll `port` fired. Takes every ready entry first, then calls the handlers:
    /// an entry is one-shot, re-armed after its handler, so one still ready after it is reported
    /// again in a later pass (other sources and work run in between), never twice in this one.
    private func dispatch(port: Int32, core: ThreadCore?) {
        var capacity = 64
        var ready: (descriptors: [Int32], events: [UInt32]) = ([], [])
        while true {
            var descriptors = [Int32](repeating: 0, count: capacity)
            var events = [UInt32](repeating: 0, count: capacity)
            let count = Int(CLongThreadsShims_epollCollect(port, &descriptors, &events, Int32(capacity)))
            ready.descriptors += descriptors[..<count]
            ready.events += events[..<count]
            if count < capacity { break }
            capacity *= 4
        }
        for (descriptor, events) in zip(ready.descriptors, ready.events) {
            let source = state.withLock { state -> DescriptorSource? in
                guard let watch = state.watches[descriptor], watch.port == port else { return nil }
                return watch.source
            }
            guard let source else { continue } // cancelled meanwhile
            // Only what it waits for now, with hang-up and error always: a handler run before it
            // in this pass, or another thread, may have disabled some of what epoll reported.
            let reported = events & (source.interest | DescriptorEvents([.hangUp, .error]).rawValue)
            if reported != 0 {
                if let core {
                    core.runCallout { source.handler(DescriptorEvents(rawValue: reported)) }
                } else {
                    source.handler(DescriptorEvents(rawValue: reported))
                }
            }
            // Re-armed only while still registered: a cancel (from the handler or another thread)
            // removed it, and its descriptor number may already belong to a new watch.
            state.withLock { state in
                if let watch = state.watches[descriptor], watch.source === source {
                    _ = CLongThreadsShims_epollRearm(port, descriptor, source.interest)
                }
            }
        }
    }
}
