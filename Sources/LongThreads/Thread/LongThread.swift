/// A resident ("keep-alive") worker thread: one pthread that runs its own run loop and serves work
/// other threads queue onto it, in order.
///
/// Use it for work that must stay on one thread: a connection, a script engine, a C library that
/// is not thread-safe. For work that only needs to be serialized, an actor on the default executor
/// is simpler and costs no thread.
///
/// ## Life story
/// 1. `init` creates the pthread (its creation is checked: a failure throws), names it for the
///    kernel, installs the run-loop source its work arrives through (which also keeps the loop
///    alive), and returns once the loop is ready: made, with its source, and about to run (work
///    posted from then on runs in its first pass).
/// 2. It serves work posted with ``perform(modes:label:_:)``, ``sync(modes:label:_:)`` and
///    ``run(modes:label:_:)``: each item is a source0 item of the loop, FIFO for each producer, run in a
///    pass of the loop in one of the item's modes. Idle, it sleeps in the kernel and costs no CPU.
/// 3. The loop never ends by itself: not when a mode is empty, not when a task calls
///    `CFRunLoopStop`, not when a task runs the loop nested. It ends in one of three ways:
///    ``stop(waitUntilDone:pending:)``; the last reference to the `LongThread` going away
///    (`deinit` stops it, draining); or the `owner` given to `init` being deallocated (checked each
///    time the loop wakes).
/// 4. Teardown, in order: new work is refused with ``LongThreadError/stopped``; accepted work
///    drains (or is discarded, each waiter told ``LongThreadError/discarded``); the loop exits;
///    the thread removes its sources on itself, releases every queued closure, and ends; a waiting
///    `stop` (or `deinit`) joins it. When `stop` returns, nothing of the thread is left.
///
/// ## Threading contract
/// Every method is callable from any thread, task or actor. The ones that wait never deadlock on
/// the thread itself: called from one of its own tasks they run work inline, or (for `stop`)
/// request and return.
public final class LongThread: Sendable {
    // MARK: Immutable
    /// The pthread's state: the queue, the lifecycle, the run loop. The pthread holds it too, and
    /// holds this handle only weakly.
    let core: ThreadCore

    /// Starts a thread and returns once its run loop is running.
    ///
    /// - Parameters:
    ///   - name: The thread's name. The kernel sees its first 15 bytes (`/proc/self/task/*/comm`,
    ///     `top -H`, debuggers); ``name`` returns it whole. Nil names the kernel thread `LongThread`.
    ///   - owner: An object whose life bounds the thread's: held weakly, and once it is gone the
    ///     loop drains and exits the next time it wakes. To make that prompt, let the owner hold
    ///     the `LongThread`: the owner's death then releases the handle, whose `deinit` stops it.
    ///   - options: Stack size and scheduling.
    /// - Throws: ``LongThreadError/cannotStart(errno:)`` when the pthread cannot be created or
    ///   cannot take the requested options.
    /// - Callable from: any thread. Blocks until the new thread's loop is ready and about to run
    ///   (tens of microseconds).
    public init(
        name: String? = nil,
        owner: AnyObject? = nil,
        options: LongThread.Options = .init()
    ) throws(LongThreadError) {
        core = ThreadCore(name: name, owner: owner, options: options)
        core.handle = self
        try core.start()
    }

    /// Tests: a thread that settles in (`ThreadCore.settleIn`) once it has lived `settleInDelay`
    /// nanoseconds (`.max`: never), not after the usual millisecond.
    init(name: String?, options: LongThread.Options = .init(), settleInDelay: UInt64) throws(LongThreadError) {
        core = ThreadCore(name: name, owner: nil, options: options, settleInDelay: settleInDelay)
        core.handle = self
        try core.start()
    }

    /// A handle for `core`, which will run on the caller's own thread (`runCurrentThread`).
    init(adopting core: ThreadCore) {
        self.core = core
        core.handle = self
    }

    /// Tests: a thread whose waits, and its callers' waits for its replies, follow `waitPolicy`
    /// (forced waits or load) instead of the machine's.
    init(name: String?, options: LongThread.Options = .init(),
         settleInDelay: UInt64 = ThreadCore.settleInDelayNanoseconds,
         waitPolicy: WaitPolicy) throws(LongThreadError) {
        core = ThreadCore(name: name, owner: nil, options: options, settleInDelay: settleInDelay, waitPolicy: waitPolicy)
        core.handle = self
        try core.start()
    }

    /// Stops the thread, draining its work, and waits for its end, unless `deinit` runs on the
    /// thread itself (a task dropped the last reference): then it requests the stop, the thread
    /// ends after that task, and nobody waits.
    deinit {
        core.handleReleased()
    }

    /// The name given to `init`, whole (the kernel's copy is cut to 15 bytes).
    public var name: String? { core.name }

    /// True while the thread accepts work: from `init` until a stop begins.
    ///
    /// - Callable from: any thread. The answer may be stale by the time it is read: to post safely,
    ///   post and handle ``LongThreadError/stopped``.
    public var isRunning: Bool {
        core.shared.withLock { $0.lifecycle.acceptsWork }
    }

    /// True when called on this thread (from one of its tasks).
    public var isCurrent: Bool { core.isCurrent }

    /// The LongThread the caller runs on, or nil on any other thread.
    ///
    /// Nil also while the thread's last handle is being released.
    public static var current: LongThread? { ThreadCore.current?.handle }
}

extension LongThread: CustomStringConvertible {
    /// `LongThread(name: "db", running)`, for logs.
    public var description: String {
        let state = core.shared.withLock { $0.lifecycle.state }
        let phase = switch state {
        case .starting: "starting"
        case .running: "running"
        case .stopping(.drain): "stopping (draining)"
        case .stopping(.discard): "stopping (discarding)"
        case .exited: "stopped"
        }
        return "LongThread(name: \(name.map { "\"\($0)\"" } ?? "nil"), \(phase))"
    }
}
