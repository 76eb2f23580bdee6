import CLongThreadsShims
import Foundation
import Glibc

/// What a descriptor is ready for.
public struct DescriptorEvents: OptionSet, Sendable, Hashable {
    /// The events as bits: 1 readable, 2 writable, 4 hang-up, 8 error.
    public let rawValue: UInt32
    /// Events from their bits.
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// Data can be read, or the peer closed its end (a read then returns 0).
    public static let readable = DescriptorEvents(rawValue: 1)
    /// Data can be written without blocking.
    public static let writable = DescriptorEvents(rawValue: 2)
    /// The descriptor hung up (reported with the events asked for).
    public static let hangUp = DescriptorEvents(rawValue: 4)
    /// The descriptor has an error pending (for a socket: `SO_ERROR`).
    public static let error = DescriptorEvents(rawValue: 8)
}

/// A file descriptor (socket, pipe, eventfd, ...) watched by a LongThread's run loop, so the thread
/// sleeps until the descriptor is ready, with no extra thread.
///
/// One descriptor costs no descriptor of its own: the watches of a thread share one epoll
/// instance per set of modes (one for every watch in `[.default]`), which the run loop waits on
/// as a port-based (version-1) source; it hands each ready descriptor to its handler. A socket
/// cannot be a CF port itself: CF reads 8 bytes from a port that fires, and would eat its data.
/// The descriptor sits in that epoll one-shot, re-armed after each callback, and is never read
/// by the library.
///
/// - Runs on: the thread, in a run-loop pass in one of the watch's modes, for as long as the
///   descriptor stays ready (level-triggered): a handler may read a little at a time.
/// - Ends: by ``cancel()`` (any thread; on the thread itself no callback follows it), or when the
///   thread stops. Cancel before closing the descriptor: a descriptor closed while watched stays
///   counted as watched on the thread, so watching its number again is refused.
/// - Lifetime: the thread keeps the source; dropping the handle does not end it. Timers
///   (``LongThreadTimer``) and observers (``RunLoopObserver``) follow the same rule: each works until
///   cancelled, until it has ended by itself (a one-shot timer), or until the thread stops.
public final class DescriptorSource: Sendable {
    /// Why a descriptor cannot be watched.
    public enum Error: Swift.Error, Equatable, Sendable {
        /// The descriptor is closed (`EBADF`), not pollable (`EPERM`: a regular file), or already
        /// watched by this thread (`EEXIST`).
        case invalidDescriptor(errno: Int32)
        /// The kernel refused an epoll instance or an entry in it (`EMFILE`, `ENFILE`, `ENOMEM`,
        /// `ENOSPC`: out of descriptors or of epoll watches).
        case cannotCreate(errno: Int32)
    }

    /// The descriptor watched. The caller owns it and closes it (after ``cancel()``).
    public let descriptor: Int32
    /// The events asked for.
    public let events: DescriptorEvents

    let handler: AttachedCallback<DescriptorEvents>
    /// The thread's watches, which hold this source until it is cancelled or the thread exits.
    private let watches: DescriptorWatches

    init(descriptor: Int32, events: DescriptorEvents, core: ThreadCore, watches: DescriptorWatches,
         handler: @escaping @Sendable (DescriptorEvents) -> Void) {
        self.descriptor = descriptor
        self.events = events
        self.watches = watches
        self.handler = AttachedCallback(core: core, callback: handler)
    }

    /// Stops watching and releases the handler. Idempotent.
    /// - Callable from: any thread; called on the thread, no callback follows it.
    public func cancel() {
        handler.cancel()
        watches.remove(self)
    }

    /// True once cancelled (or once its thread stopped).
    public var isCancelled: Bool { handler.isCancelled }

    /// The epoll bits of `events`: 1 readable, 2 writable.
    var interest: UInt32 { events.rawValue & 3 }
}

extension LongThread {
    /// Calls `handler` on this thread whenever `descriptor` is ready for `events`, in `modes`.
    ///
    /// The source works until cancelled or until the thread stops, whether or not its handle is
    /// kept (`_ = try thread.watch(...)` keeps watching).
    ///
    /// - Parameters:
    ///   - descriptor: A pollable descriptor the caller owns, not watched by this thread already.
    ///   - events: What to wait for: ``DescriptorEvents/readable`` and/or ``DescriptorEvents/writable``.
    ///   - modes: The run-loop modes the handler may run in.
    ///   - handler: Called on this thread with the events the descriptor is ready for.
    /// - Returns: the source, to cancel it before closing the descriptor.
    /// - Throws: ``DescriptorSource/Error/invalidDescriptor(errno:)`` for a closed, unpollable or
    ///   already-watched descriptor; ``DescriptorSource/Error/cannotCreate(errno:)`` when the
    ///   process is out of descriptors or epoll watches; ``LongThreadError/stopped`` once a stop has
    ///   begun.
    /// - Callable from: any thread; never blocks on the thread's work.
    @discardableResult
    public func watch(
        _ descriptor: Int32,
        for events: DescriptorEvents,
        modes: [RunLoop.Mode] = [.default],
        _ handler: @escaping @Sendable (DescriptorEvents) -> Void
    ) throws -> DescriptorSource {
        try core.watch(descriptor, for: events, modes: modes, handler)
    }
}

extension ThreadCore {
    func watch(
        _ descriptor: Int32, for events: DescriptorEvents, modes: [RunLoop.Mode],
        _ handler: @escaping @Sendable (DescriptorEvents) -> Void
    ) throws -> DescriptorSource {
        let (source, ringsPark) = try shared.withLock { state in
            guard state.lifecycle.acceptsWork, let engine = state.engine else { throw LongThreadError.stopped }
            let watches = engine.descriptorWatches
            let source = DescriptorSource(
                descriptor: descriptor, events: events, core: self, watches: watches, handler: handler
            )
            _ = try state.mask(for: modes)
            try watches.add(source, modes: modes, engine: engine, core: self)
            state.attachments[ObjectIdentifier(source.handler)] = source.handler
            // A thread with descriptor sources does not park (`parkLength`): its events would wait.
            return (source, state.queue.unpark())
        }
        if ringsPark { parkBell.ring() }
        return source
    }
}

/// The descriptor sources of one thread, and the epoll instances they share: one per set of
/// modes, each a version-1 source in those modes. Owned by the thread's engine.
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
            let rc = CLongThreadsShims_epollAdd(hub.port, source.descriptor, source.interest)
            switch rc {
            case 0: break
            case ENOMEM, ENOSPC: throw .cannotCreate(errno: rc)
            default: throw .invalidDescriptor(errno: rc)
            }
            state.watches[source.descriptor] = Watch(source: source, port: hub.port)
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
            if let core {
                core.runCallout { source.handler(DescriptorEvents(rawValue: events)) }
            } else {
                source.handler(DescriptorEvents(rawValue: events))
            }
            // Re-armed only while still registered: a cancel (from the handler or another thread)
            // removed it, and its descriptor number may already belong to a new watch.
            state.withLock { state in
                if let watch = state.watches[descriptor], watch.source === source {
                    CLongThreadsShims_epollRearm(port, descriptor, source.interest)
                }
            }
        }
    }
}
