// longthread-sqlite: a key-value store on SQLite, confined to one LongThread, under load until
// SIGTERM (or SIGINT) or `--seconds`; then a graceful shutdown, and a count of what was written.
//
//   longthread-sqlite --database /tmp/kv.db [--tasks 64] [--threads 2] [--seconds 0]
//
// The database file is made afresh (an old one, and its -wal and -shm, are removed first).
// Prints `ready` once the writers run, and at the end `acknowledged=N rows=M refused=R`: with
// the store's service listed first, every acknowledged write is in the file (N == M).
import Foundation
import Logging
import LongThreads
import ServiceLifecycle
import SQLiteExample

func option(_ name: String, default value: String) -> String {
    let arguments = CommandLine.arguments
    guard let index = arguments.firstIndex(of: name), index + 1 < arguments.count else { return value }
    return arguments[index + 1]
}

let path = option("--database", default: "/tmp/longthread-sqlite.db")
let seconds = Int(option("--seconds", default: "0")) ?? 0
for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
var logger = Logger(label: "longthread-sqlite")
logger.logLevel = .notice

let store = try await KeyValueStore(path: path, onStall: { report in
    // The report names the call ("put", "slow query") and carries the thread's stack.
    FileHandle.standardError.write(Data("\(report)\n".utf8))
})
let load = InsertLoad(
    store: store,
    tasks: Int(option("--tasks", default: "64")) ?? 64,
    threads: Int(option("--threads", default: "2")) ?? 2
)
// The store's service first: a group shuts down in reverse order, so the writers stop before
// the store's thread drains and closes the connection.
let group = ServiceGroup(
    services: [store.service, load],
    gracefulShutdownSignals: [.sigterm, .sigint],
    logger: logger
)
let timer = Task {
    guard seconds > 0 else { return }
    try await Task.sleep(for: .seconds(seconds))
    await group.triggerGracefulShutdown()
}
let ready = Task {
    while load.acknowledged.value == 0 { try await Task.sleep(for: .milliseconds(1)) }
    FileHandle.standardOutput.write(Data("ready\n".utf8)) // unbuffered: a pipe sees it at once
}
try await group.run()
timer.cancel()
ready.cancel()
// The store's thread has ended and closed its connection: count what the file holds.
let rows = try SQLiteConnection(path: path).count()
print("acknowledged=\(load.acknowledged.value) rows=\(rows) refused=\(load.refused.value)")
