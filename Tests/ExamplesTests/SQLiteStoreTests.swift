import CSQLite
import ExampleSupport
import Foundation
import Logging
import LongThreads
import LongThreadsTestSupport
import ServiceLifecycle
import SQLiteExample
import Testing

/// A fresh database path under /tmp, removed (with its -wal and -shm) by `remove`.
private struct TemporaryDatabase {
    let path = "/tmp/lt-sqlite-\(UUID().uuidString.prefix(8)).db"

    func remove() {
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
    }

    /// The rows in the file, counted by a connection of the caller's own.
    func rows() throws -> Int { try SQLiteConnection(path: path).count() }
}

@Suite("SQLite example: a NOMUTEX connection confined to one LongThread")
struct SQLiteStoreTests {
    @Test("async and blocking callers at once: every acknowledged write is a row; opened, used and closed on the thread")
    func concurrentCallers() async throws {
        let database = TemporaryDatabase()
        defer { database.remove() }
        let closes = Recorder<Bool>()
        let store = try await KeyValueStore(path: database.path, onClose: { closes.record($0) })
        let acknowledged = Counter()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for writer in 0..<32 {
                group.addTask {
                    for index in 0..<100 {
                        try await store.put("\(index)", for: "task\(writer).\(index)")
                        acknowledged.increment()
                    }
                }
            }
            for writer in 0..<2 {
                group.addTask {
                    try await offThePool {
                        for index in 0..<200 {
                            try store.put("\(index)", for: "thread\(writer).\(index)")
                            acknowledged.increment()
                        }
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(acknowledged.value == 32 * 100 + 2 * 200)
        #expect(try await store.count() == acknowledged.value)
        #expect(try await store.value(for: "task7.42") == "42")
        #expect(try await offThePool { try store.value(for: "thread1.199") } == "199")
        #expect(try await store.value(for: "missing") == nil)
        await store.close()
        #expect(closes.events == [true]) // closed once, on the thread that opened it
        #expect(try database.rows() == acknowledged.value)
        await #expect(throws: LongThreadError.stopped) { try await store.count() }
    }

    @Test("an open that fails is thrown to the caller, and leaves no thread behind")
    func openFails() async throws {
        await #expect(throws: SQLiteError.self) {
            _ = try await KeyValueStore(path: "/nonexistent-lt/dir/kv.db", stallThreshold: nil)
        }
    }

    @Test("a graceful shutdown of the ServiceGroup: writers stop first, the thread drains and closes, rows == acknowledgements")
    func gracefulShutdown() async throws {
        let database = TemporaryDatabase()
        defer { database.remove() }
        let closes = Recorder<Bool>()
        let store = try await KeyValueStore(path: database.path, onClose: { closes.record($0) })
        let load = InsertLoad(store: store, tasks: 16, threads: 2)
        let group = ServiceGroup(services: [store.service, load], logger: Logger(label: "sqlite-test"))
        async let running: Void = group.run()
        #expect(await eventually { load.acknowledged.value >= 500 })
        await group.triggerGracefulShutdown()
        try await running
        #expect(closes.events == [true])
        #expect(load.refused.value == 0) // listed first, the store outlived its writers
        #expect(try database.rows() == load.acknowledged.value)
    }

    @Test("a slow statement is reported while it runs, labelled, with the thread's stack inside SQLite")
    func stallReport() async throws {
        let database = TemporaryDatabase()
        defer { database.remove() }
        let reports = Recorder<StallMonitor.Report>()
        let store = try await KeyValueStore(
            path: database.path, stallThreshold: .milliseconds(20), onStall: { reports.record($0) }
        )
        // Long enough to be caught (about a second on an idle machine), whatever the load.
        let counted = try await store.countSlowly(to: 1_000_000)
        #expect(counted == 1_000_000)
        let report = try #require(reports.events.first { $0.label == "slow query" })
        #expect(report.kind == .slowDispatch)
        #expect(report.threadName == "sqlite")
        #expect(!report.stack.isEmpty, "\(report.stackNote ?? "")")
        #expect(report.stack.contains { $0.image?.contains("sqlite3") == true }, "\(report)")
        await store.close()
    }

    @Test("SIGTERM to longthread-sqlite under load: every acknowledged write is in the file")
    func sigterm() throws {
        let database = TemporaryDatabase()
        defer { database.remove() }
        let here = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
        let executable = here.appendingPathComponent("longthread-sqlite")
        try #require(FileManager.default.isExecutableFile(atPath: executable.path),
                     "run `swift build --product longthread-sqlite`")
        let process = Process()
        process.executableURL = executable
        process.arguments = ["--database", database.path, "--tasks", "32", "--threads", "2"]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        defer { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }
        let lines = CapturedLines(output.fileHandleForReading)
        try #require(lines.waitForLine(containing: "ready", timeout: 60) != nil)
        kill(process.processIdentifier, SIGTERM)
        #expect(lines.waitForEnd(timeout: 60))
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        let summary = try #require(lines.lines.first { $0.hasPrefix("acknowledged=") })
        let fields = Dictionary(uniqueKeysWithValues: summary.split(separator: " ").map { field in
            let parts = field.split(separator: "=")
            return (String(parts[0]), Int(parts[1]) ?? -1)
        })
        #expect(fields["acknowledged"] ?? 0 > 0)
        #expect(fields["acknowledged"] == fields["rows"], "\(summary)")
        #expect(fields["refused"] == 0, "\(summary)")
        #expect(try database.rows() == fields["rows"])
    }
}
