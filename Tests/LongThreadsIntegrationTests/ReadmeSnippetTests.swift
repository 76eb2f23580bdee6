import Logging
import LongThreads
import LongThreadsTestKit
import LongThreadsLogging
import LongThreadsMetrics
import LongThreadsServiceLifecycle
import Metrics
import MetricsTestKit
import ServiceLifecycle
import ServiceLifecycleTestKit
import Foundation
import Synchronization
import Testing

// README.md's Swift snippets, and the integration snippets of the DocC articles, verbatim between
// the `// README:` markers, so that they compile. This target compiles with warnings as errors
// (Package.swift), so a snippet that warns (an `await` that picks a blocking overload, a `try`
// before a call that cannot throw) fails the build. `readmeIsCompiledHere` checks that every
// Swift block of README.md appears here.

/// Stands in for the database connection of the README's tour.
final class Connection: Sendable {
    func execute(_ statement: String) {}
    func query(_ sql: String) throws -> [String] { [sql] }
    func count() -> Int { 42 }
}

// README: tour
func tourExample(connection: Connection, sql: String) async throws -> (rows: [String], rowCount: () throws -> Int) {
    let db = try LongThread(name: "db")                          // returns once its run loop is ready

    try db.perform { connection.execute("VACUUM") }               // queued, FIFO, runs on "db"
    let rows = try await db.run { try connection.query(sql) }     // async code: suspends the task
    func rowCount() throws -> Int {
        try db.sync { connection.count() }                        // synchronous code: blocks, rethrows
    }

    let monitor = try StallMonitor(threshold: .milliseconds(100)) { report in print(report) }
    monitor.watch(db)                                             // reports a task that runs too long
    try db.perform(label: "parse feed") { connection.execute("ANALYZE") }

    await db.stop()   // refuse new work, drain what was accepted, end the loop, join: the task suspends
    return (rows, rowCount)
}
// README: end

/// Stands in for the cache of the README's test kit snippet: each entry expires on its thread.
final class ExpiringCache: Sendable {
    let thread: LongThread
    let lifetime: Duration
    private let entries = Mutex<[String: String]>([:])

    init(thread: LongThread, lifetime: Duration) {
        self.thread = thread
        self.lifetime = lifetime
    }

    func put(_ key: String, _ value: String) throws {
        entries.withLock { $0[key] = value }
        try thread.perform(after: lifetime) { self.entries.withLock { _ = $0.removeValue(forKey: key) } }
    }

    subscript(key: String) -> String? { entries.withLock { $0[key] } }
}

// README: testKit
@Test func entriesExpireAfterAnHour() throws {
    let test = try TestThread(name: "cache")                  // a real LongThread, on virtual time
    let cache = ExpiringCache(thread: test.thread, lifetime: .seconds(3600))
    try cache.put("key", "value")                             // expires with perform(after:)
    try test.advance(by: .seconds(3600))                      // the hour passes in milliseconds
    #expect(cache["key"] == nil)
}
// README: end

/// Stands in for the C library of the README's set-up snippet: opened, used and closed on its
/// thread (the counts let the test see that each ran once).
final class Store: Sendable {
    static let shared = Store()
    private let counts = Mutex((opened: 0, closed: 0))
    func open() throws { counts.withLock { $0.opened += 1 } }
    func close() { counts.withLock { $0.closed += 1 } }
    func count() -> Int { counts.withLock { $0.opened - $0.closed } }
}

// README: setUp
func setUpExample() async throws -> (LongThread, Int) {
    let sqlite = try LongThread(name: "sqlite", options: .init(
        setUp: { try Store.shared.open() },     // on the thread, before its first item
        tearDown: { Store.shared.close() }      // on the thread, after its last, however it ends
    ))
    let count = try await sqlite.run { Store.shared.count() }
    return (sqlite, count)
}
// README: end

/// Stands in for the README's SQLite store: not `Sendable`, made and used on its thread only.
final class SQLiteStore {
    private(set) var rows = 0
    init(path: String) throws { rows = path.isEmpty ? 0 : 1 }
    func count() throws -> Int { rows }
}

// README: bound
func boundExample(path: String) async throws -> (LongThread, ThreadBound<SQLiteStore>, Int) {
    let sqlite = try LongThread(name: "sqlite")
    let store = try await ThreadBound(on: sqlite) { try SQLiteStore(path: path) }  // opened on "sqlite"
    let count = try await store.run { try $0.count() }    // in order with the thread's other work
    return (sqlite, store, count)
}
// README: end

// The C library of "Confining a C library" (DocC), with a stand-in for its C API.
enum MyLibError: Error { case cannotOpen, closed }
private final class FakeLibraryHandle {}
func mylib_open() -> OpaquePointer? { OpaquePointer(Unmanaged.passRetained(FakeLibraryHandle()).toOpaque()) }
func mylib_close(_ handle: OpaquePointer) { Unmanaged<FakeLibraryHandle>.fromOpaque(UnsafeRawPointer(handle)).release() }
func mylib_version(_ handle: OpaquePointer) -> Int32 { 3 }

// DocC: confining
/// A handle of a library that allows one thread at a time.
final class Library {                            // not Sendable: it never leaves its thread
    private let handle: OpaquePointer

    init() throws {                              // on the thread
        guard let opened = mylib_open() else { throw MyLibError.cannotOpen }
        handle = opened
    }

    var version: Int32 { mylib_version(handle) }

    deinit { mylib_close(handle) }               // on the thread, however it ends
}

func confiningExample() async throws -> Int32 {
    let thread = try LongThread(name: "mylib")
    let library = try await ThreadBound(on: thread) { try Library() }   // what init throws, this throws
    let version = try await library.run { $0.version }
    await thread.stop()
    await #expect(throws: LongThreadError.stopped) { try await library.run { $0.version } }
    return version
}
// DocC: end

// README: executor
actor Database {
    let thread: LongThread                       // hold it: unownedExecutor does not
    nonisolated var unownedExecutor: UnownedSerialExecutor { thread.asUnownedSerialExecutor() }
    private var rows = 0

    init(thread: LongThread) { self.thread = thread }

    func insert() -> Int {                       // runs on "db", isolated to the actor
        rows += 1
        return rows
    }

    nonisolated func rowsFromThreadWork() -> Int {   // called from perform work on "db"
        assumeIsolated { $0.rows }                    // holds: on the thread is isolated
    }
}

func executorExample() async throws -> (Int, Bool) {
    let thread = try LongThread(name: "db")
    let db = Database(thread: thread)
    _ = await db.insert()                        // a hop onto "db", FIFO with perform work
    let rows = try await thread.run { db.rowsFromThreadWork() }
    let onThread = await withTaskExecutorPreference(thread) {
        async let child = LongThread.current === thread   // child tasks run on "db" too
        return await child
    }
    await thread.stop()
    return (rows, onThread)
}
// README: end

// README: service
func serviceExample(logger: Logger) async throws {
    let db = try LongThread(name: "db")
    let group = ServiceGroup(
        services: [LongThreadService(db)],       // run() lasts as long as the thread
        gracefulShutdownSignals: [.sigterm],     // SIGTERM: drain db's accepted work, end it
        logger: logger
    )
    try await group.run()
}
// README: end

// README: logging
func loggingExample(logger: Logger) throws -> LongThread {
    try LongThread(name: "db", options: .init(instrument: LoggingInstrument(logger: logger)))
    // info: LongThread started / stop requested / stopped (longthread.tasks.run=…, longthread.tasks.discarded=…)
    // warning: LongThread stalled (longthread.task.label=…, longthread.stall.ms=…), with a StallMonitor
}
// README: end

// README: metrics
func metricsExample() throws -> LongThread {
    // After MetricsSystem.bootstrap(…): longthread.tasks.run, .task.latency, .queue.depth, .wakeups, …
    try LongThread(name: "db", options: .init(instrument: MetricsInstrument(threadName: "db")))
}
// README: end

// README: multiplex
func multiplexExample(logger: Logger) throws -> LongThread {
    let instrument = MultiplexInstrument(LoggingInstrument(logger: logger), MetricsInstrument(threadName: "db"))
    return try LongThread(name: "db", options: .init(instrument: instrument))
}
// README: end

@Suite("README snippets")
struct ReadmeSnippetTests {
    @Test("every Swift block of README.md is compiled here, line for line")
    func readmeIsCompiledHere() throws {
        let here = URL(fileURLWithPath: #filePath)
        let root = here.deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let readme = try String(contentsOf: root.appendingPathComponent("README.md"), encoding: .utf8)
        let compiled = try String(contentsOf: here, encoding: .utf8)
        // Compared without indentation; imports sit at the top of this file.
        let lines = { (text: Substring) in
            text.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
                .filter { !$0.isEmpty && !$0.hasPrefix("import ") }
        }
        let compiledLines = lines(compiled[...])
        let blocks = readme.components(separatedBy: "```swift\n").dropFirst()
            .map { lines($0.components(separatedBy: "```")[0][...]) }
        #expect(!blocks.isEmpty)
        for block in blocks {
            let found = compiledLines.indices.contains { start in
                compiledLines[start...].starts(with: block)
            }
            #expect(found, "README block not compiled here:\n\(block.joined(separator: "\n"))")
        }
    }

    @Test("tour snippet: work runs, the thread ends, and later posts are refused")
    func tour() async throws {
        let (rows, rowCount) = try await tourExample(connection: Connection(), sql: "SELECT 1")
        #expect(rows == ["SELECT 1"])
        #expect(throws: LongThreadError.stopped) { try rowCount() }
    }

    @Test("setUp snippet: set up before the first item, torn down once the thread ends")
    func setUp() async throws {
        let (thread, count) = try await setUpExample()
        #expect(count == 1)
        await thread.stop()
        #expect(Store.shared.count() == 0)
    }

    @Test("bound snippet: made and used on the thread; unreachable once it ended")
    func bound() async throws {
        let (thread, store, count) = try await boundExample(path: "db.sqlite")
        #expect(count == 1)
        await thread.stop()
        await #expect(throws: LongThreadError.stopped) { try await store.run { try $0.count() } }
    }

    @Test("confining snippet: opened on the thread, used there, closed when it ends")
    func confining() async throws {
        #expect(try await confiningExample() == 3)
    }

    @Test("executor snippet")
    func executor() async throws {
        let (rows, onThread) = try await executorExample()
        #expect(rows == 1)
        #expect(onThread)
    }

    @Test("service snippet: the group ends on a graceful shutdown")
    func service() async throws {
        try await testGracefulShutdown { trigger in
            try await withThrowingTaskGroup(of: Void.self) { tasks in
                tasks.addTask { try await serviceExample(logger: quietLogger) }
                trigger.triggerGracefulShutdown()
                try await tasks.waitForAll()
            }
        }
    }

    @Test("logging snippet")
    func logging() throws {
        let store = RecordingLogHandler.Store()
        let thread = try loggingExample(logger: store.logger())
        thread.stop()
        #expect(store.records.map(\.message).first == "LongThread started")
    }

    @Test("multiplex snippet: logs through the first instrument while the second measures")
    func multiplex() throws {
        let store = RecordingLogHandler.Store()
        let thread = try multiplexExample(logger: store.logger())
        try thread.sync {}
        thread.stop()
        #expect(store.records.map(\.message).first == "LongThread started")
    }

    @Test("metrics snippet")
    func metrics() throws {
        let thread = try metricsExample()   // the default factory: a no-op until bootstrapped
        try thread.sync {}
        thread.stop()
    }
}
