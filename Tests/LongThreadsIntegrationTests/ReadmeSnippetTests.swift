import Logging
import LongThreads
import LongThreadsLogging
import LongThreadsMetrics
import LongThreadsServiceLifecycle
import Metrics
import MetricsTestKit
import ServiceLifecycle
import ServiceLifecycleTestKit
import Testing

// The README's integration snippets, verbatim between the `// README:` markers, so that they compile.

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
    defer { thread.stop() }
    let db = Database(thread: thread)
    _ = await db.insert()                        // a hop onto "db", FIFO with perform work
    let rows = try await thread.run { db.rowsFromThreadWork() }
    let onThread = await withTaskExecutorPreference(thread) {
        async let child = LongThread.current === thread   // child tasks run on "db" too
        return await child
    }
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
