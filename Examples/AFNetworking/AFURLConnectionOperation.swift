import Dispatch
import ExampleSupport
import Foundation
import LongThreads

/// AFNetworking 2.x's `AFURLConnectionOperation`, on LongThread: a request operation whose start
/// and cancel are performed on one shared network thread, in the operation's run-loop modes, and
/// whose completion reaches the caller on a serial callback queue.
///
/// ```objc
/// - (void)start {
///     [self.lock lock];
///     if ([self isCancelled]) {
///         [self performSelector:@selector(cancelConnection) onThread:[[self class] networkRequestThread]
///                    withObject:nil waitUntilDone:NO modes:[self.runLoopModes allObjects]];
///     } else if ([self isReady]) {
///         self.state = AFOperationExecutingState;
///         [self performSelector:@selector(operationDidStart) onThread:[[self class] networkRequestThread]
///                    withObject:nil waitUntilDone:NO modes:[self.runLoopModes allObjects]];
///     }
///     [self.lock unlock];
/// }
/// ```
///
/// ## Life story
/// 1. `init`: ready. 2. ``start()``: executing; `operationDidStart` runs on the network thread and
/// opens the connection. 3. The connection's socket readiness arrives on that thread as
/// descriptor-source callbacks; the thread sleeps in between. 4. It finishes once — with a
/// response, an error, or ``AFURLError/cancelled`` after ``cancel()`` — and the completion block
/// runs on ``completionQueue``.
///
/// Exactly one completion per operation, whatever the order of `start`, `cancel` and the network:
/// the state under `lock` says who finishes.
public class AFURLConnectionOperation: @unchecked Sendable {
    // `@unchecked Sendable`: `state` is guarded by `lock` (AF's `self.lock`); `connection` is used
    // on the network thread only.

    /// `+[AFURLConnectionOperation networkRequestThread]`: one thread named `AFNetworking`,
    /// created on first use from whichever thread comes first.
    ///
    /// AF guards the creation with `dispatch_once` and keeps the loop alive with an `NSMachPort`
    /// it never uses; here a `static let` runs its initializer once, race-free, and the LongThread
    /// keeps its loop alive with a port source of its own. Unlike AF's `[runLoop run]`, it could
    /// be stopped, but a shared network thread lives as long as the process.
    public static let networkRequestThread: LongThread = {
        do {
            return try LongThread(name: "AFNetworking")
        } catch {
            preconditionFailure("cannot start the AFNetworking thread: \(error)")
        }
    }()

    /// Kept-alive connections, shared by the operations (network thread only).
    static let connectionPool = AFConnectionPool(thread: networkRequestThread)

    /// The queue completion blocks run on unless one is given: serial, so that callers see
    /// completions one at a time, in the order requests finished (AF 3's lesson:
    /// `operationQueue.maxConcurrentOperationCount = 1`).
    public static let defaultCompletionQueue = DispatchQueue(label: "com.alamofire.networking.operation.completion")

    /// Where an operation is in its life: AF's `AFOperationState`.
    public enum State: Sendable, Equatable {
        /// Made, not started.
        case ready
        /// Started: its work is queued on, or running on, the network thread.
        case executing
        /// Finished with a response or an error; the completion block has been queued.
        case finished
    }

    // MARK: Immutable
    /// The request, as given (redirects do not change it; the response's `url` says where it ended).
    public let request: AFURLRequest
    /// The modes `start`'s and `cancel`'s work, and the socket's sources, run in: AF's
    /// `runLoopModes`, by default `NSRunLoopCommonModes`, as here.
    public let runLoopModes: [RunLoop.Mode]
    /// The serial queue the completion block runs on.
    public let completionQueue: DispatchQueue

    private struct Guarded {
        var state: State = .ready
        var cancelled = false
        var completion: (@Sendable (Result<AFHTTPResponse, AFURLError>) -> Void)?
        var result: Result<AFHTTPResponse, AFURLError>?
    }
    // MARK: Guarded by lock
    private let lock = Protected(Guarded())

    /// The thread its work runs on, and that thread's pool of kept-alive connections.
    private let thread: LongThread
    private let pool: AFConnectionPool

    // MARK: Network thread only
    private var connection: AFURLConnection?

    /// An operation for `request`, ready to start. Any thread.
    ///
    /// - Parameters:
    ///   - request: what to send.
    ///   - runLoopModes: the modes its work and its socket's sources run in on the network thread.
    ///   - completionQueue: where the completion block runs.
    ///   - thread: the thread its work runs on; nil: the shared ``networkRequestThread``. Another
    ///     thread (a test's, on virtual time) gets a connection pool of its own for this operation.
    public init(request: AFURLRequest, runLoopModes: [RunLoop.Mode] = [.common],
                completionQueue: DispatchQueue = AFURLConnectionOperation.defaultCompletionQueue,
                thread: LongThread? = nil) {
        self.thread = thread ?? Self.networkRequestThread
        self.pool = thread.map { AFConnectionPool(thread: $0) } ?? Self.connectionPool
        self.request = request
        self.runLoopModes = runLoopModes
        self.completionQueue = completionQueue
    }

    /// Sets the block called once, on ``completionQueue``, with the response or the error
    /// (AF's `setCompletionBlockWithSuccess:failure:` in one block). Set it before ``start()``.
    ///
    /// - Parameter block: the block; it gets the final response (redirects followed, interim
    ///   responses skipped) or the error.
    public func setCompletionBlock(_ block: @escaping @Sendable (Result<AFHTTPResponse, AFURLError>) -> Void) {
        lock.withLock { $0.completion = block }
    }

    /// Where the operation is in its life. Any thread.
    public var state: State { lock.withLock { $0.state } }
    /// Whether ``cancel()`` was called before the operation finished. Any thread.
    public var isCancelled: Bool { lock.withLock { $0.cancelled } }
    /// The outcome, once finished. Any thread.
    public var result: Result<AFHTTPResponse, AFURLError>? { lock.withLock { $0.result } }

    /// Starts the request on the network thread. Callable from any thread; a second call does
    /// nothing. A cancelled operation finishes as cancelled instead.
    public func start() {
        let action: (@Sendable () -> Void)? = lock.withLock { guarded in
            if guarded.cancelled, guarded.state == .ready {
                guarded.state = .executing
                return { [self] in cancelConnection() }
            }
            guard guarded.state == .ready else { return nil }
            guarded.state = .executing
            return { [self] in operationDidStart() }
        }
        guard let action else { return }
        do {
            try thread.perform(modes: runLoopModes, action)
        } catch {
            // The network thread never stops in this example; if it did, say so instead of
            // leaving the caller waiting forever.
            finish(.failure(.networkConnectionLost(errno: ESHUTDOWN)))
        }
    }

    /// Cancels the request: if it is executing, `cancelConnection` runs on the network thread, in
    /// the operation's modes, and the completion gets ``AFURLError/cancelled``. Callable from any
    /// thread; after finishing it does nothing (the result stands).
    public func cancel() {
        let wasExecuting: Bool? = lock.withLock { guarded in
            guard guarded.state != .finished, !guarded.cancelled else { return nil }
            guarded.cancelled = true
            return guarded.state == .executing
        }
        guard wasExecuting == true else { return } // not started: `start()` will cancel
        try? thread.perform(modes: runLoopModes) { [self] in cancelConnection() }
    }

    // MARK: - Network thread

    /// AF's `operationDidStart`: opens the connection, unless cancelled meanwhile.
    private func operationDidStart() {
        if isCancelled { return cancelConnection() }
        let connection = AFURLConnection(
            request: request, thread: thread, pool: pool, modes: runLoopModes
        ) { [self] result in
            finish(result)
        }
        self.connection = connection
        connection.start()
    }

    /// AF's `cancelConnection`: ends the connection if there is one, and finishes as cancelled.
    private func cancelConnection() {
        if let connection {
            connection.cancel() // calls finish(.cancelled) unless it already finished
        } else {
            finish(.failure(.cancelled))
        }
    }

    /// Finishes once and queues the completion on the callback queue.
    private func finish(_ result: Result<AFHTTPResponse, AFURLError>) {
        let completion: (@Sendable (Result<AFHTTPResponse, AFURLError>) -> Void)?? = lock.withLock { guarded in
            guard guarded.state != .finished else { return nil }
            guarded.state = .finished
            guarded.result = result
            return .some(guarded.completion)
        }
        connection = nil
        guard case .some(let block) = completion, let block else { return }
        completionQueue.async { block(result) }
    }
}
