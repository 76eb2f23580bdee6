import LongThreads
import ServiceLifecycle

/// A swift-service-lifecycle `Service` backed by a `LongThread`: its `run()` lasts
/// as long as the thread, and a graceful shutdown drains and stops the thread.
///
/// ```swift
/// let db = try LongThread(name: "db")
/// let group = ServiceGroup(
///     services: [LongThreadService(db), httpServer],
///     gracefulShutdownSignals: [.sigterm],
///     logger: logger
/// )
/// try await group.run()     // SIGTERM: db drains its accepted work, then its thread ends
/// ```
///
/// List it before the services that post to its thread (`httpServer` above): a group shuts its
/// services down one at a time, in reverse order of the list, so the thread stops after them and
/// runs every item they posted. Listed after them, it stops first and their last posts throw
/// `LongThreadError.stopped`.
///
/// ## Life story
/// 1. `run()` suspends (it blocks no cooperative thread) while the thread serves work.
/// 2. A graceful shutdown (SIGTERM in a `ServiceGroup`, or `testGracefulShutdown`'s trigger)
///    calls `stop(waitUntilDone: false, pending: gracefulShutdown)`: new work is refused, accepted
///    work drains (by default), and `run()` returns once the thread has ended and been joined.
/// 3. Cancelling the task that runs `run()` (the group's forceful path, after a failure or when the
///    graceful shutdown takes too long) stops the thread with `cancellation` (by default
///    `.discard`: the running item completes, every waiter of a dropped item is told
///    `LongThreadError.discarded`); `run()` again returns once the thread has ended.
/// 4. If the thread ends any other way (someone called `stop`, its owner died), `run()` returns
///    too, so the group learns that the service is gone and applies its
///    `successTerminationBehavior` (by default: shut the group down).
///
/// ## Order in the group
/// List the service **before** the services that post to its thread: a `ServiceGroup` shuts its
/// services down in reverse order, so those stop posting first, and then the thread drains what it
/// accepted. Listed after them, the thread stops first and their later posts throw
/// `LongThreadError.stopped`.
///
/// ## What the thread owns
/// Keep what must live on the thread (a C library's handle that is not thread-safe) in a
/// `ThreadBound`: made on the thread, reached through it, and destroyed on it when the thread
/// ends, after the drain and before `tearDown`. Hand the bound value to the services that use it.
///
/// ```swift
/// let thread = try LongThread(name: "db")
/// let db = try await ThreadBound(on: thread) { try Connection(path: path) }   // opened on "db"
/// let group = ServiceGroup(
///     services: [LongThreadService(thread), HTTPServer(db: db)],   // the thread first
///     gracefulShutdownSignals: [.sigterm],
///     logger: logger
/// )
/// try await group.run()   // SIGTERM: the server stops, "db" drains, the connection closes on "db"
/// ```
///
/// `LongThread.Options.setUp` and `tearDown` run on the thread too (through
/// `init(name:options:)`, or on the `LongThread` you wrap): `setUp` before any work, `tearDown`
/// after the drain (or, on cancellation, after the item running at that moment) and after the
/// thread's bound values were destroyed, before `run()` returns.
///
/// - Threading: `run()` is callable from any task; the shutdown and cancellation handlers never
///   block (a waiting `stop()` would hold a cooperative thread until the drain ends), and the wait
///   for the thread's end (`LongThread.waitUntilExit()`, awaited) holds none.
/// - Important: `run()` does not return while the thread's current item runs: an item that never
///   returns keeps the service (and the group's shutdown) waiting.
public struct LongThreadService: Service, CustomStringConvertible {
    /// The thread this service runs. Post work to it as usual.
    public let thread: LongThread
    /// What a graceful shutdown does with accepted work. `.drain` by default.
    public var gracefulShutdown: LongThread.PendingWork
    /// What cancelling `run()` does with accepted work. `.discard` by default.
    public var cancellation: LongThread.PendingWork

    /// A service for an existing thread.
    ///
    /// - Callable from: anywhere; does not start or stop anything.
    public init(
        _ thread: LongThread,
        gracefulShutdown: LongThread.PendingWork = .drain,
        cancellation: LongThread.PendingWork = .discard
    ) {
        self.thread = thread
        self.gracefulShutdown = gracefulShutdown
        self.cancellation = cancellation
    }

    /// Starts a thread (see `LongThread.init(name:owner:options:)`) and makes it a service.
    ///
    /// - Callable from: any thread; blocks until the new thread's loop runs (tens of microseconds).
    /// - Throws: `LongThreadError.cannotStart(errno:)`.
    public init(name: String? = nil, options: LongThread.Options = .init()) throws(LongThreadError) {
        self.init(try LongThread(name: name, options: options))
    }

    /// Suspends until the thread has ended; stops it on graceful shutdown or cancellation.
    ///
    /// Returns once the thread has ended and been joined, for whatever reason. Never throws: a
    /// thread's end is not a failure of the service (it is reported by returning).
    ///
    /// - Callable from: any task, typically a `ServiceGroup`'s child task. Calling it on a thread
    ///   that already ended returns at once.
    public func run() async throws {
        let thread = thread
        let gracefulShutdown = gracefulShutdown
        let cancellation = cancellation
        await withTaskCancellationHandler {
            await withGracefulShutdownHandler {
                _ = await thread.waitUntilExit() // false (at once) only if run() runs on the thread itself
            } onGracefulShutdown: {
                thread.stop(waitUntilDone: false, pending: gracefulShutdown)
            }
        } onCancel: {
            thread.stop(waitUntilDone: false, pending: cancellation)
        }
    }

    /// `LongThreadService(LongThread(name: "db", running))`.
    public var description: String { "LongThreadService(\(thread))" }
}
