import CLongThreadsShims
import Foundation
import Glibc
import Synchronization

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
    /// The descriptor hung up: reported whatever the source waits for, never asked for.
    public static let hangUp = DescriptorEvents(rawValue: 4)
    /// The descriptor has an error pending (for a socket: `SO_ERROR`; for a pipe's write end:
    /// no reader left): reported whatever the source waits for, never asked for.
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
/// - Hang-up and error: reported to every source, whatever it waits for, a source that waits for
///   nothing included, as epoll reports `EPOLLHUP` and `EPOLLERR` and as Android's Looper calls a
///   listener registered for `EVENT_ERROR` alone. A hang-up stays reported pass after pass until
///   the source is cancelled: on ``DescriptorEvents/hangUp`` or ``DescriptorEvents/error``, a
///   handler that is done with the descriptor cancels its source.
/// - Ends: by ``cancel()`` (any thread; on the thread itself no callback follows it), or when the
///   thread stops. Cancel before closing the descriptor: a descriptor closed while watched stays
///   counted as watched on the thread, so watching its number again is refused.
/// - Lifetime: the thread keeps the source; dropping the handle does not end it. Timers
///   (``LongThreadTimer``) and observers (``RunLoopObserver``) follow the same rule: each works until
///   cancelled, until it has ended by itself (a one-shot timer), or until the thread stops.
///
/// ## One source per descriptor, its events changed in place
///
/// A thread watches a descriptor once: a second `watch` of it is refused (`EEXIST`). What the
/// source waits for changes on that one registration, with ``enable(_:)`` and ``disable(_:)``,
/// as CoreFoundation's `CFFileDescriptorEnableCallBacks` and `CFFileDescriptorDisableCallBacks`
/// do and as SwiftNIO re-registers a channel's interest set. A connection reads all the time and
/// waits for writable only while it has output the kernel would not take:
///
/// ```swift
/// let source = try thread.watch(socket, for: .readable) { events in
///     if events.contains(.writable) { flush() }   // calls source.disable(.writable) once empty
///     if events.contains(.readable) { readSome() }
/// }
/// // send() returned EAGAIN:
/// try source.enable(.writable)
/// ```
///
/// Dispatch's other way, a read source and a write source on one descriptor, was not taken: epoll
/// holds one entry per descriptor per instance, so two sources would share that entry anyway
/// (merging their events, and one's cancel or re-arm changing the other's), and one handler
/// sees both events of a pass together, in an order it chooses (drain output, then read).
public final class DescriptorSource: Sendable {
    /// Why a descriptor cannot be watched, or its events cannot change.
    public enum Error: Swift.Error, Equatable, Sendable {
        /// The descriptor is closed (`EBADF`), not pollable (`EPERM`: a regular file), or already
        /// watched by this thread (`EEXIST`: change the events of its source instead, with
        /// ``DescriptorSource/enable(_:)``).
        case invalidDescriptor(errno: Int32)
        /// The kernel refused an epoll instance or an entry in it (`EMFILE`, `ENFILE`, `ENOMEM`,
        /// `ENOSPC`: out of descriptors or of epoll watches).
        case cannotCreate(errno: Int32)
        /// The source was cancelled, or its thread stopped: it watches nothing, and what it waits
        /// for can no longer change. Watch the descriptor anew instead.
        case cancelled
    }

    /// The descriptor watched. The caller owns it and closes it (after ``cancel()``).
    public let descriptor: Int32

    let handler: AttachedCallback<DescriptorEvents>
    /// The thread's watches, which hold this source until it is cancelled or the thread exits.
    private let watches: DescriptorWatches
    /// `events` as epoll bits (1 readable, 2 writable); written only under the watches' lock.
    private let interestBits: Atomic<UInt32>

    init(descriptor: Int32, events: DescriptorEvents, core: ThreadCore, watches: DescriptorWatches,
         handler: @escaping @Sendable (DescriptorEvents) -> Void) {
        self.descriptor = descriptor
        interestBits = Atomic(events.rawValue & 3)
        self.watches = watches
        self.handler = AttachedCallback(core: core, callback: handler)
    }

    /// What the source waits for now: ``DescriptorEvents/readable``, ``DescriptorEvents/writable``,
    /// both or neither (the events given to `watch`, as changed since by ``enable(_:)`` and
    /// ``disable(_:)``). Hang-up and error are reported whatever they are, never asked for.
    /// - Callable from: any thread.
    public var events: DescriptorEvents { DescriptorEvents(rawValue: interest) }

    /// Adds `events` to what the source waits for (CF's `CFFileDescriptorEnableCallBacks`).
    ///
    /// Only ``DescriptorEvents/readable`` and ``DescriptorEvents/writable`` count; enabling what
    /// is enabled already costs no system call.
    ///
    /// - Throws: ``Error/cancelled`` once the source was cancelled or its thread stopped;
    ///   ``Error/invalidDescriptor(errno:)`` if the descriptor was closed while watched (`EBADF`);
    ///   ``Error/cannotCreate(errno:)`` if the kernel is out of epoll watches. The events are then
    ///   unchanged.
    /// - Callable from: any thread; serialized with the thread's other changes to its watches.
    ///   Once it returns, a callout that starts later may report the events added; in a handler,
    ///   the change applies from the next callout on.
    public func enable(_ events: DescriptorEvents) throws(Error) {
        try watches.change(self) { $0.union(events) }
    }

    /// Takes `events` out of what the source waits for (CF's `CFFileDescriptorDisableCallBacks`).
    ///
    /// With neither readable nor writable left, the source stays registered and its handler hears
    /// only hang-up and error (Android's `EVENT_ERROR`): a writer that has sent everything learns
    /// that its reader went away.
    ///
    /// - Throws: ``Error/cancelled`` once the source was cancelled or its thread stopped;
    ///   ``Error/invalidDescriptor(errno:)`` if the descriptor was closed while watched.
    /// - Callable from: any thread; serialized with the thread's other changes to its watches.
    ///   Once it returns, no callout that starts later reports the events taken out (the thread
    ///   filters what epoll had already reported); a callout already running on the thread may
    ///   still have them in its argument.
    public func disable(_ events: DescriptorEvents) throws(Error) {
        try watches.change(self) { $0.subtracting(events) }
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
    var interest: UInt32 { interestBits.load(ordering: .acquiring) }

    /// Under the watches' lock only.
    func setInterest(_ bits: UInt32) { interestBits.store(bits, ordering: .releasing) }
}

extension LongThread {
    /// Calls `handler` on this thread whenever `descriptor` is ready for `events`, in `modes`.
    ///
    /// The source works until cancelled or until the thread stops, whether or not its handle is
    /// kept (`_ = try thread.watch(...)` keeps watching).
    ///
    /// - Parameters:
    ///   - descriptor: A pollable descriptor the caller owns, not watched by this thread already.
    ///   - events: What to wait for: ``DescriptorEvents/readable`` and/or ``DescriptorEvents/writable``,
    ///     or neither: hang-up and error only, until ``DescriptorSource/enable(_:)``; changed later with
    ///     ``DescriptorSource/enable(_:)`` and ``DescriptorSource/disable(_:)``.
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
        try withLockWaking { state, wake in
            guard state.lifecycle.acceptsWork, let engine = state.engine else { throw LongThreadError.stopped }
            let watches = engine.descriptorWatches
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
