// longthread-demo: a short tour of LongThread. Top-level code is @MainActor: every closure below is
// written in main-actor code and runs on a LongThread, which a release build checks too.
import AFNetworkingExample
import CoreFoundation
import Foundation
import LongThreads
import WeexExample

func step(_ title: String) { print("\n== \(title)") }
func say(_ line: String) { print("   \(line)") }
let threadName = { LongThread.current?.name ?? "main" }

// `sync` and `perform(waitUntilDone: true)` block their caller, so they are for synchronous code:
// the compiler refuses them in async code (this top-level code awaits, so it is async), where
// `run` suspends instead. The blocking calls of this tour live in synchronous functions.
func blocking<T>(_ body: () throws -> T) rethrows -> T { try body() }

step("1. Start a resident thread")
let worker = try LongThread(name: "demo.worker")
say("started \(worker); its run loop is running and sleeps on a port source until work arrives")

step("2. Queue work (async), then wait for a result (sync) and await one (run)")
for index in 1...3 {
    try worker.perform { print("   async item \(index) on \(threadName())") }
}
let sum = try blocking { try worker.sync { (1...100).reduce(0, +) } }
say("sync returned \(sum), computed on the worker after the three async items (FIFO)")
let mode = try await worker.run { RunLoop.current.currentMode?.rawValue ?? "none" }
say("run returned: the worker's RunLoop.current runs in \(mode)")

step("3. The waiting perform that crashes in Objective-C, made safe")
say("Objective-C: a thread whose block returned has no run loop, and")
say("performSelector:onThread:waitUntilDone:YES crashes: 'target thread exited while waiting'.")
let fresh = try LongThread(name: "demo.fresh")
try perform(onThread: fresh) { print("   task A on \(threadName())") }
try blocking { try perform(onThread: fresh, waitUntilDone: true) { print("   task B on \(threadName()), waited for") } }
fresh.stop(waitUntilDone: false) // top-level code: `await fresh.stop()` would pick the blocking overload
await fresh.waitUntilExit()
do {
    try blocking { try perform(onThread: fresh, waitUntilDone: true) { print("   never printed") } }
} catch {
    say("after stop, the same perform throws instead of crashing: \(error)")
}

step("4. A task cannot end the loop by accident")
try await worker.run { CFRunLoopStop(CFRunLoopGetCurrent()) }
say("a task called CFRunLoopStop; the thread still serves: \(try await worker.run { "ok" })")

step("5. Run-loop modes: the scroll-view lesson")
let tracking = RunLoop.Mode("tracking")
let defaultTicks = Counter()
let commonTicks = Counter()
let defaultTimer = try worker.schedule(every: .milliseconds(10), modes: [.default]) { _ in defaultTicks.add() }
let commonTimer = try worker.schedule(every: .milliseconds(10), modes: [.common]) { _ in commonTicks.add() }
try worker.addCommonMode(tracking)
let (pausedTicks, liveTicks) = try await worker.run { () -> (Int, Int) in
    // Like UIKit while a finger drags a scroll view: the loop runs in the tracking mode for 200 ms.
    let (d, c) = (defaultTicks.value, commonTicks.value)
    try worker.runNested(in: tracking, until: .now + .milliseconds(200))
    return (defaultTicks.value - d, commonTicks.value - c)
}
say("during a 200 ms nested run in \"tracking\": the default-mode timer ticked \(pausedTicks) times,")
say("the common-mode timer \(liveTicks) times (a default-mode NSTimer stops while a scroll view scrolls)")
defaultTimer.cancel()
commonTimer.cancel()

step("6. A stall monitor catches a stuck task, with its stack, and the work that waited behind it")
let stalls = DispatchSemaphore(value: 0)
let monitor = try StallMonitor(threshold: .milliseconds(100), deliveryThreshold: .milliseconds(100)) { report in
    print("   \(report.kind == .slowDispatch ? "slow dispatch" : "slow delivery"): " + report.description.replacingOccurrences(of: "\n", with: "\n   "))
    stalls.signal()
}
monitor.watch(worker)
try worker.perform(label: "parse feed") { _ = parseFeed(for: .milliseconds(250)) }
try worker.perform(label: "render") {}
say("a task labelled \"parse feed\" keeps the worker busy for 250 ms; \"render\" waits behind it ...")
for _ in 0..<2 where stalls.wait(timeout: .now() + 10) == .timedOut {
    say("no stall report within 10 s: that is a bug")
    exit(1)
}
try await worker.run {}
monitor.unwatch(worker)

step("7. Stop, draining what was accepted")
let drained = Counter()
try worker.perform { usleep(50_000) } // keeps the worker busy while the rest queues up
for _ in 0..<10_000 { try worker.perform { drained.add() } }
say("queued 10,000 items behind a 50 ms task; stop(pending: .drain) ...")
worker.stop(waitUntilDone: false, pending: .drain)
await worker.waitUntilExit()
say("stop returned after all \(drained.value) ran and the thread ended: \(worker)")

step("8. Stop, discarding what waits")
let other = try LongThread(name: "demo.discard")
let started = DispatchSemaphore(value: 0)
let gate = DispatchSemaphore(value: 0)
try other.perform { started.signal(); gate.wait() } // the worker is busy until the gate opens
started.wait()
let waiter = Task.detached { () -> String in
    do { return try await other.run { "ran" } } catch { return "\(error)" }
}
while other.statistics.pending == 0 { await Task.yield() } // the waiter's item is queued
other.stop(waitUntilDone: false, pending: .discard)
gate.signal()
await other.waitUntilExit() // suspends: top-level code picks the async overload (built with warnings as errors)
say("a caller awaiting queued work was told: \(await waiter.value)")

step("9. Weex: bridge and component threads, layout, results on the main run loop")
let weex = try WeexExample.run(log: { say($0) })
say("every step on its thread, unload drained: \(weex.threadsStopped)")

step("10. AFNetworking 2: one shared network thread, requests over loopback HTTP")
let af = try AFNetworkingExample.run(count: 40, log: { say($0) }, progress: { done, total in
    if done % 10 == 0 || done == total { say("completed \(done)/\(total) on the serial callback queue") }
})
let ok = af.results.values.filter { (try? $0.get())?.statusCode == 200 }.count
say("\(ok) responses 200; cancelled mid-flight -> \(af.results[af.cancelledIndex]!); closed port -> \(af.results[af.closedPortIndex]!)")
say("completions per request: \(Set(af.completionCounts.values)) (exactly one each), thread \"\(af.networkThreadName ?? "?")\"")

step("11. longthread-daemon: a journal on one LongThread, requests serialized onto it")
let daemonURL = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("longthread-daemon")
if FileManager.default.isExecutableFile(atPath: daemonURL.path) {
    let journalURL = FileManager.default.temporaryDirectory.appendingPathComponent("longthread-demo-\(getpid()).journal")
    let daemon = Process()
    daemon.executableURL = daemonURL
    daemon.arguments = ["--journal", journalURL.path, "--stdin"]
    let (requests, replies) = (Pipe(), Pipe())
    daemon.standardInput = requests
    daemon.standardOutput = replies
    daemon.standardError = FileHandle.nullDevice
    try daemon.run()
    requests.fileHandleForWriting.write(Data("APPEND first\nAPPEND second\nFROB\nCOUNT\n".utf8))
    try requests.fileHandleForWriting.close() // end of input: the daemon drains, flushes, exits 0
    let answered = String(decoding: replies.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    daemon.waitUntilExit()
    for line in answered.split(separator: "\n") { say("reply: \(line)") }
    let journal = (try? String(contentsOf: journalURL, encoding: .utf8)) ?? ""
    say("exit status \(daemon.terminationStatus); journal: \(journal.replacingOccurrences(of: "\n", with: " | "))")
    try? FileManager.default.removeItem(at: journalURL)
} else {
    say("(skipped: `swift build --product longthread-daemon` builds it; it needs libbsd-dev and libsystemd-dev)")
}

step("12. Backpressure: a bounded queue holds memory flat")
/// Resident memory now, in MiB (/proc/self/statm).
func residentMiB() -> Double {
    let fields = ((try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8)) ?? "").split(separator: " ")
    return Double(fields.count > 1 ? Int(fields[1]) ?? 0 : 0) * Double(sysconf(Int32(_SC_PAGESIZE))) / 1_048_576
}
/// 20,000 items of 20 µs, each carrying 256 bytes, posted as fast as one producer can:
/// far faster than the thread runs them. Returns the queue's peak and the growth of RSS.
func overload(_ thread: LongThread) throws -> (peak: Int, growth: Double) {
    let before = residentMiB()
    var growth = 0.0
    for index in 0..<20_000 {
        let payload = [UInt8](repeating: UInt8(truncatingIfNeeded: index), count: 256)
        try thread.perform {
            withExtendedLifetime(payload) {}
            let end = DispatchTime.now().uptimeNanoseconds + 20_000
            while DispatchTime.now().uptimeNanoseconds < end {}
        }
        if index % 500 == 0 { growth = max(growth, residentMiB() - before) }
    }
    let peak = thread.statistics.highWaterMark
    thread.stop(pending: .discard)
    return (peak, growth)
}
let unbounded = try overload(LongThread(name: "demo.unbounded"))
say("unbounded queue: \(unbounded.peak) items waited at once, RSS grew \(Int(unbounded.growth.rounded())) MiB")
let limit = LongThread.QueueLimit(highWatermark: 1_000, whenFull: .block)
let bounded = try overload(LongThread(name: "demo.bounded", options: .init(queueLimit: limit)))
say("queueLimit 1,000 (.block): at most \(bounded.peak) items waited, RSS grew \(Int(bounded.growth.rounded())) MiB;")
say("the producer was held back to the thread's pace instead of filling memory")

print("\nDone.")

/// A counter the worker increments and main reads after the stop (which orders the two).
final class Counter: @unchecked Sendable {
    private var count = 0
    func add() { count += 1 }
    var value: Int { count }
}

/// The demo's stuck task: busy for `duration`, in a function the stall report's stack names.
@inline(never)
func parseFeed(for duration: Duration) -> UInt64 {
    let end = ContinuousClock.now + duration
    var checksum: UInt64 = 0
    while ContinuousClock.now < end { checksum = checksum &* 31 &+ 7 }
    return checksum
}
