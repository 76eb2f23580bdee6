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
/// ## Per-thread setup and teardown
/// Give the thread `LongThread.Options.setUp` and `tearDown` (through
/// `init(name:options:)`, or to the `LongThread` you wrap): `setUp` runs on the thread before
/// any work, and on a graceful shutdown the thread drains its accepted work, then runs
/// `tearDown` on the thread, before `run()` returns. A cancellation (`.discard`) runs it too,
/// after the item running at that moment.
///
/// ```swift
/// let db = try LongThreadService(name: "db", options: .init(
///     setUp: { try Database.open() },      // on the thread, before any work
///     tearDown: { Database.close() }       // on the thread, after the last item
/// ))
/// ```
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
