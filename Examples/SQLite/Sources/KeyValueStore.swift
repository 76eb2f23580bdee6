import LongThreads
import LongThreadsServiceLifecycle

/// A key-value store on SQLite, confined to one LongThread.
///
/// The connection is a `ThreadBound<SQLiteConnection>`: opened on the store's thread, reached
/// only through it, and closed on it when the thread ends (a stop, a `ServiceGroup`'s graceful
/// shutdown through ``service``) or when the store is released. The store itself is `Sendable`
/// with no `@unchecked` anywhere: hold it in an actor, a global, a child task.
///
/// - Async callers use the `async` methods, which suspend (they hold no thread while they wait).
/// - Blocking callers (a C callback, a thread of their own) use the synchronous ones, which block
///   like `LongThread.sync`; not from async code.
/// - Every call runs on the store's thread, in order; a `StallMonitor` reports a call that runs
///   longer than the threshold given to ``init(path:name:stallThreshold:onStall:onClose:)``,
///   with the thread's stack.
public final class KeyValueStore: Sendable {
    /// The store's thread. Stop it (or run ``service`` in a `ServiceGroup`) to close the store.
    public let thread: LongThread
    let connection: ThreadBound<SQLiteConnection>
    private let monitor: StallMonitor?

    /// Starts the store's thread and opens the database on it.
    ///
    /// - Parameters:
    ///   - path: The database file.
    ///   - name: The thread's name.
    ///   - stallThreshold: Reports a call running longer than this to `onStall`; nil watches nothing.
    ///   - onStall: Gets each stall report (on the monitor's thread), with the stalled thread's stack.
    ///   - onClose: Told, when the connection closes, whether it closed on the thread that opened it.
    /// - Throws: ``SQLiteError`` if SQLite cannot open the file (the thread is then stopped), or a
    ///   `LongThreadError` if the thread cannot start.
    public init(
        path: String,
        name: String = "sqlite",
        stallThreshold: Duration? = .milliseconds(100),
        onStall: @escaping @Sendable (StallMonitor.Report) -> Void = { _ in },
        onClose: (@Sendable (_ onOpeningThread: Bool) -> Void)? = nil
    ) async throws {
        let thread = try LongThread(name: name)
        do {
            connection = try await ThreadBound(on: thread, label: "open") {
                try SQLiteConnection(path: path, onClose: onClose)
            }
        } catch {
            thread.stop(waitUntilDone: false)
            await thread.waitUntilExit()
            throw error
        }
        self.thread = thread
        monitor = try stallThreshold.map { try StallMonitor(threshold: $0, handler: onStall) }
        monitor?.watch(thread)
    }

    /// A `Service` for a `ServiceGroup`: a graceful shutdown drains the calls accepted, then
    /// closes the connection on the thread. List it before the services that call the store: a
    /// group shuts its services down in reverse order, so those stop calling first.
    public var service: LongThreadService { LongThreadService(thread) }

    /// Stops the thread after the calls accepted, closing the connection, and waits for its end.
    public func close() async {
        thread.stop(waitUntilDone: false)
        await thread.waitUntilExit()
    }

    // MARK: - Async callers

    /// Stores `value` under `key`; returns once it is written (acknowledged).
    public func put(_ value: String, for key: String) async throws {
        try await connection.run(label: "put") { try $0.put(value, for: key) }
    }

    /// The value stored under `key`, or nil.
    public func value(for key: String) async throws -> String? {
        try await connection.run(label: "get") { try $0.value(for: key) }
    }

    /// How many keys the store holds.
    public func count() async throws -> Int {
        try await connection.run(label: "count") { try $0.count() }
    }

    /// A slow statement (see `SQLiteConnection.countSlowly(to:)`), labelled "slow query" in stall reports.
    public func countSlowly(to limit: Int) async throws -> Int {
        try await connection.run(label: "slow query") { try $0.countSlowly(to: limit) }
    }

    // MARK: - Blocking callers

    /// Stores `value` under `key`, blocking until it is written. Not from async code.
    @available(*, noasync, message: "blocks a cooperative thread: use 'try await store.put(_:for:)'")
    public func put(_ value: String, for key: String) throws {
        try connection.sync(label: "put") { try $0.put(value, for: key) }
    }

    /// The value stored under `key`, or nil, blocking meanwhile. Not from async code.
    @available(*, noasync, message: "blocks a cooperative thread: use 'try await store.value(for:)'")
    public func value(for key: String) throws -> String? {
        try connection.sync(label: "get") { try $0.value(for: key) }
    }
}
