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

/// A file descriptor (socket, pipe, eventfd, ...) watched by a LongThread's run loop: a port-based
/// (version-1) source, so the thread sleeps until the descriptor is ready, with no extra thread.
///
/// CF reads 8 bytes from a version-1 source's port when it fires, so a socket cannot be the port
/// itself (its data would be eaten). Each watch has an epoll descriptor of its own as the port;
/// the watched descriptor sits in it (one-shot, re-armed after each callback) and is never read
/// by the library.
///
/// - Runs on: the thread, in a run-loop pass in one of the watch's modes, for as long as the
///   descriptor stays ready (level-triggered): a handler may read a little at a time.
/// - Ends: by ``cancel()`` (any thread; on the thread itself no callback follows it), or when the
///   thread stops. Cancel before closing the descriptor.
public final class DescriptorSource: Sendable {
    /// Why a descriptor cannot be watched.
    public enum Error: Swift.Error, Equatable, Sendable {
        /// The descriptor is closed, not pollable (a regular file), or already watched.
        case invalidDescriptor(errno: Int32)
        /// The kernel refused an epoll instance.
        case cannotCreate(errno: Int32)
    }

    /// The descriptor watched. The caller owns it and closes it (after ``cancel()``).
    public let descriptor: Int32
    /// The events asked for.
    public let events: DescriptorEvents

    let handler: AttachedCallback<DescriptorEvents>
    private let pollDescriptor: Int32

    init(descriptor: Int32, events: DescriptorEvents, core: ThreadCore,
         handler: @escaping @Sendable (DescriptorEvents) -> Void) throws(Error) {
        let poll = CLongThreadsShims_epollCreate()
        if poll < 0 { throw .cannotCreate(errno: -poll) }
        let rc = CLongThreadsShims_epollAdd(poll, descriptor, events.rawValue & 3)
        if rc != 0 {
            close(poll)
            throw .invalidDescriptor(errno: rc)
        }
        self.descriptor = descriptor
        self.events = events
        self.pollDescriptor = poll
        self.handler = AttachedCallback(core: core, callback: handler)
    }

    /// Stops watching and releases the handler. Idempotent.
    /// - Callable from: any thread; called on the thread, no callback follows it.
    public func cancel() { handler.cancel() }

    /// True once cancelled (or once its thread stopped).
    public var isCancelled: Bool { handler.isCancelled }

    /// The epoll descriptor CF waits on; closed when CF releases the source.
    var port: Int32 { pollDescriptor }

    /// Loop thread: the port fired. The entry is one-shot: after the handler it is re-armed, and
    /// if the descriptor is still ready the kernel reports the port again, so the handler is called
    /// again in a later pass (other sources and work run in between).
    func dispatch() {
        let ready = CLongThreadsShims_epollPoll(pollDescriptor)
        if ready != 0 { handler(DescriptorEvents(rawValue: ready)) }
        if !isCancelled {
            CLongThreadsShims_epollRearm(pollDescriptor, descriptor, events.rawValue & 3)
        }
    }
}

extension LongThread {
    /// Calls `handler` on this thread whenever `descriptor` is ready for `events`, in `modes`.
    ///
    /// - Returns: the source, to cancel it before closing the descriptor.
    /// - Throws: ``DescriptorSource/Error/invalidDescriptor(errno:)`` for a closed, unpollable or
    ///   already-watched descriptor; ``LongThreadError/stopped`` once a stop has begun.
    /// - Callable from: any thread.
    public func watch(
        _ descriptor: Int32,
        for events: DescriptorEvents,
        modes: [RunLoop.Mode] = [.default],
        _ handler: @escaping @Sendable (DescriptorEvents) -> Void
    ) throws -> DescriptorSource {
        let source = try DescriptorSource(descriptor: descriptor, events: events, core: core, handler: handler)
        let port = source.port
        let item = EngineItem.source(port: port, target: { [weak source] in source?.dispatch() }, onRelease: { close(port) })
        source.handler.engineItem = item
        try core.register(source.handler, item: item, modes: modes)
        return source
    }
}
