import Synchronization

/// Carries the poster's context (a trace, a request id: usually task-locals) to the work it posts
/// on a ``LongThread``.
///
/// Task-locals belong to a task; work posted to a thread runs on its run loop, outside any task,
/// so it would see none of them. A propagator captures what it needs where the work is posted and
/// restores it around the work on the thread, on every way to post: `perform` (queued, waiting,
/// with a timeout, `after:`, `at:`), `performAtFrontOfQueue`, `submit`, `sync` (with or without a
/// timeout), `run` (plain, `after:`, `at:`), and ``LongThread/schedule(every:initialDelay:tolerance:modes:_:)``,
/// whose callback runs in the scheduler's context at every fire. Observers and descriptor
/// sources are not posts: their handlers run in no poster's context. Install one with
/// ``LongThread/contextPropagator``; `LongThreadsTracing` ships one for swift-distributed-tracing's
/// `ServiceContext`.
///
/// Jobs of an actor pinned to the thread (or of a task that prefers it as its executor) need no
/// propagator: they run inside their task, with its task-locals.
///
/// - Threading: ``capture(label:)`` runs on the posting thread or task, once per post;
///   ``restore(_:label:around:)`` runs on the LongThread, around the work, inside its run loop.
///   Both must be cheap and must not block.
public protocol ContextPropagator: Sendable {
    /// Captures the context to carry to work being posted, or returns nil when there is none
    /// (then the work is queued unchanged and ``restore(_:label:around:)`` is not called).
    ///
    /// - Parameter label: The label the poster gave the work, if any.
    /// - Returns: What ``restore(_:label:around:)`` receives on the thread, or nil.
    func capture(label: String?) -> (any Sendable)?

    /// Runs `work` on the LongThread inside the context that ``capture(label:)`` captured.
    ///
    /// Must call `work` exactly once, and return what it returns.
    /// - Parameters:
    ///   - captured: The value ``capture(label:)`` returned at post time.
    ///   - label: The label the poster gave the work, if any.
    ///   - work: The posted work.
    /// - Throws: What `work` throws.
    /// - Returns: What `work` returns.
    func restore<Result>(_ captured: any Sendable, label: String?, around work: () throws -> Result) rethrows -> Result
}

extension LongThread {
    /// The process-wide ``ContextPropagator``, or nil (the default) to carry no context.
    ///
    /// Set it once at start-up, before posting work; `LongThreadsTracing`'s bootstrap does. Work
    /// posted after the change sees the new propagator; work already queued keeps what it captured.
    /// With none set, a post pays one atomic load (acquiring: a plain load on x86-64) for this
    /// feature; with one set, no lock either.
    ///
    /// - Callable from: any thread; reading and writing are safe while threads post work.
    public static var contextPropagator: (any ContextPropagator)? {
        get { ContextCarrier.installed()?.propagator }
        set { ContextCarrier.install(newValue) }
    }
}

/// Where posted work is given its poster's context when a ``ContextPropagator`` is installed.
///
/// One path for every spelling: the capture happens where each kind of work item is made
/// (`WorkItem.make`, `QueuedWork`, `BlockingWork`, `AsyncWork`, and a repeating
/// `LongThreadTimer`), never at the spellings, so a new spelling, which has to make one of them,
/// cannot forget it. `perform` makes its bare `.fireAndForget` only after `WorkItem.boxed` found no
/// context (and no label). Fire-and-forget work keeps its context in its item (`ContextWork`);
/// the other kinds wrap their closure (`carry`).
enum ContextCarrier {
    /// The installed propagator, boxed so that one pointer publishes it.
    final class Installed: Sendable {
        let propagator: any ContextPropagator
        init(_ propagator: any ContextPropagator) { self.propagator = propagator }
    }

    /// The address of a retained `Installed`, or 0: the one load a post pays when no propagator is
    /// installed. (An address, as `UnsafeRawPointer` is not `Sendable`.)
    /// Read without a lock, so a replaced box cannot be freed (a post may be reading it): it moves
    /// to `retired`, where it stays reachable. Propagators are set once at start-up, so these are few.
    private static let current = Atomic<UInt>(0)
    private static let retired = Mutex<[Installed]>([])

    static func install(_ propagator: (any ContextPropagator)?) {
        let box = propagator.map { UInt(bitPattern: Unmanaged.passRetained(Installed($0)).toOpaque()) } ?? 0
        let old = current.exchange(box, ordering: .acquiringAndReleasing)
        guard let address = UnsafeRawPointer(bitPattern: old) else { return }
        let replaced = Unmanaged<Installed>.fromOpaque(address)
        retired.withLock { $0.append(replaced.takeUnretainedValue()) }
        replaced.release()
    }

    @inline(__always)
    static func installed() -> Installed? {
        guard let box = UnsafeRawPointer(bitPattern: current.load(ordering: .acquiring)) else { return nil }
        return Unmanaged<Installed>.fromOpaque(box).takeUnretainedValue()
    }

    /// What `wrap` makes of the poster's context, or nil when no propagator is installed or its
    /// capture found none. The box is borrowed, not retained, for the capture (it is never freed:
    /// see `current`), and a capture that finds nothing leaves nothing to destroy: so a post with
    /// a propagator that finds no context costs little more than the call.
    @inline(__always)
    static func capture<Result>(
        label: String?,
        _ wrap: (Installed, consuming any Sendable) -> Result
    ) -> Result? {
        guard let box = UnsafeRawPointer(bitPattern: current.load(ordering: .acquiring)) else { return nil }
        return Unmanaged<Installed>.fromOpaque(box)._withUnsafeGuaranteedRef { installed in
            // A `switch`, not `guard let`: on its `.none` path the compiler knows there is
            // nothing to destroy (`guard let` destroyed the empty optional through its metadata).
            switch installed.propagator.capture(label: label) {
            case .none: return nil
            case .some(let captured): return wrap(installed, captured)
            }
        }
    }

    /// The work to queue for `work` with a waiter (`QueuedWork`): `work` itself, or `work` run in
    /// the poster's context. The closure keeps the propagator's box (one retain), not a copy of the
    /// propagator. (Plain fire-and-forget work keeps its context in its work item instead, which
    /// saves the wrapping closure: `WorkItem.make`.)
    @inline(__always)
    static func carry(_ work: @escaping @Sendable () -> Void, label: String?) -> @Sendable () -> Void {
        let carried = capture(label: label) { installed, captured -> @Sendable () -> Void in
            { installed.propagator.restore(captured, label: label, around: work) }
        }
        return carried ?? work
    }

    /// As `carry(_:label:)`, for work whose caller blocks until it ran (`sync`): not `Sendable`,
    /// as it runs while its caller waits.
    @inline(__always)
    static func carry(_ work: @escaping () -> Void, label: String?) -> () -> Void {
        let carried = capture(label: label) { installed, captured -> () -> Void in
            { installed.propagator.restore(captured, label: label, around: work) }
        }
        return carried ?? work
    }

    /// As `carry(_:label:)`, for a repeating timer's callback: each call runs in the context of
    /// whoever scheduled the timer.
    static func carry<Argument>(_ callback: @escaping @Sendable (Argument) -> Void) -> @Sendable (Argument) -> Void {
        let carried = capture(label: nil) { installed, captured -> @Sendable (Argument) -> Void in
            { argument in installed.propagator.restore(captured, label: nil) { callback(argument) } }
        }
        return carried ?? callback
    }

    /// As `carry(_:label:)`, for awaited work that returns a value (`run`).
    @inline(__always)
    static func carry<T>(
        _ work: @escaping @Sendable () throws -> T,
        label: String?
    ) -> @Sendable () throws -> T {
        let carried = capture(label: label) { installed, captured -> @Sendable () throws -> T in
            { try installed.propagator.restore(captured, label: label, around: work) }
        }
        return carried ?? work
    }
}
