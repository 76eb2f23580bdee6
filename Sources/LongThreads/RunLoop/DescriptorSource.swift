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
