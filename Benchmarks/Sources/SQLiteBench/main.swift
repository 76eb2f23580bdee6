// sqlite-bench: the SQLite example's workload (an upsert then a lookup per operation, on a
// NOMUTEX connection in WAL mode) through three ways of giving one caller at a time: a
// LongThread-bound value (`ThreadBound.run`), an actor, and a serial DispatchQueue (a
// continuation per operation). Same run, rounds interleaved, medians reported.
//
//   swift run -c release sqlite-bench [--tasks 16] [--ops 2000] [--rounds 5] [--database /tmp/sqlite-bench.db]
import Dispatch
import Foundation
import LongThreads

func option(_ name: String, default value: Int) -> Int {
    let arguments = CommandLine.arguments
    guard let index = arguments.firstIndex(of: name), index + 1 < arguments.count else { return value }
    return Int(arguments[index + 1]) ?? value
}

let tasks = option("--tasks", default: 16)
let opsPerTask = option("--ops", default: 2000)
let rounds = option("--rounds", default: 5)
let path = CommandLine.arguments.firstIndex(of: "--database").map { CommandLine.arguments[$0 + 1] }
    ?? "/tmp/sqlite-bench.db"

/// The store on a LongThread, through `ThreadBound`.
struct BoundContender: Sendable {
    let thread: LongThread
    let store: ThreadBound<Store>
    init(path: String) async throws {
        thread = try LongThread(name: "sqlite-bench")
        store = try await ThreadBound(on: thread) { Store(path: path) }
    }
    func operate(_ key: String) async throws -> Int { try await store.run { $0.operate(key: key) } }
    func close() async {
        thread.stop(waitUntilDone: false)
        await thread.waitUntilExit()
    }
}

/// The store in an actor on the default executor.
actor ActorContender {
    var store: Store
    init(path: String) { store = Store(path: path) }
    func operate(_ key: String) -> Int { store.operate(key: key) }
}

/// The store behind a serial DispatchQueue: what `@unchecked Sendable` user code looks like.
final class QueueContender: @unchecked Sendable {
    private let queue = DispatchQueue(label: "sqlite-bench")
    private var store: Store // touched only on `queue`
    init(path: String) { store = Store(path: path) }
    func operate(_ key: String) async -> Int {
        await withCheckedContinuation { continuation in
            queue.async { continuation.resume(returning: self.store.operate(key: key)) }
        }
    }
}

/// CPU seconds of the whole process so far (user + system), from getrusage.
func processCPUSeconds() -> Double {
    var usage = rusage()
    getrusage(Int32(RUSAGE_SELF.rawValue), &usage)
    func seconds(_ time: timeval) -> Double { Double(time.tv_sec) + Double(time.tv_usec) / 1e6 }
    return seconds(usage.ru_utime) + seconds(usage.ru_stime)
}

struct Sample { var opsPerSecond: Double; var cpuMicrosecondsPerOp: Double }

/// `tasks` tasks, each doing `opsPerTask` operations in turn through `operate`.
func measure(tasks: Int, opsPerTask: Int, _ operate: @escaping @Sendable (String) async throws -> Int) async throws -> Sample {
    let cpuBefore = processCPUSeconds()
    let clock = ContinuousClock()
    let start = clock.now
    try await withThrowingTaskGroup(of: Void.self) { group in
        for task in 0..<tasks {
            group.addTask {
                for index in 0..<opsPerTask { _ = try await operate("t\(task).\(index)") }
            }
        }
        try await group.waitForAll()
    }
    let elapsed = clock.now - start
    let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    let operations = Double(tasks * opsPerTask)
    return Sample(opsPerSecond: operations / seconds,
                  cpuMicrosecondsPerOp: (processCPUSeconds() - cpuBefore) * 1e6 / operations)
}

func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }

var samples: [String: [Sample]] = [:]
let names = ["LongThread + ThreadBound", "actor", "serial DispatchQueue"]
var load = [0.0, 0.0, 0.0]
getloadavg(&load, 3)
let loadBefore = load[0]
for round in 1...rounds {
    FileHandle.standardError.write(Data("round \(round)/\(rounds)\n".utf8))
    let bound = try await BoundContender(path: path)
    samples[names[0], default: []].append(try await measure(tasks: tasks, opsPerTask: opsPerTask) { try await bound.operate($0) })
    await bound.close()
    let actor = ActorContender(path: path)
    samples[names[1], default: []].append(try await measure(tasks: tasks, opsPerTask: opsPerTask) { await actor.operate($0) })
    let queue = QueueContender(path: path)
    samples[names[2], default: []].append(try await measure(tasks: tasks, opsPerTask: opsPerTask) { await queue.operate($0) })
}
getloadavg(&load, 3)
print("sqlite-bench: \(tasks) tasks x \(opsPerTask) operations (upsert + lookup), \(rounds) rounds, medians;"
    + " \(ProcessInfo.processInfo.activeProcessorCount) CPUs, load average \(loadBefore) -> \(load[0])")
print("")
print("| contender | operations/s | CPU µs/operation |")
print("|---|---:|---:|")
for name in names {
    let runs = samples[name]!
    print("| \(name) | \(Int(median(runs.map(\.opsPerSecond)))) | \(String(format: "%.1f", median(runs.map(\.cpuMicrosecondsPerOp)))) |")
}
for suffix in ["", "-wal", "-shm"] { unlink(path + suffix) }
