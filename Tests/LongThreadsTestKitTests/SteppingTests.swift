import Foundation
import LongThreads
import LongThreadsTestKit
import LongThreadsTestSupport
import Testing

@Suite("Test kit: stepping a paused thread")
struct SteppingTests {
    @Test("a paused thread runs nothing until stepped; runOne runs one item, in FIFO order")
    func runOne() throws {
        let test = try TestThread(name: "kit-step", paused: true)
        defer { test.thread.stop() }
        let log = Recorder<String>()
        for name in ["a", "b", "c"] { try test.thread.perform(label: name) { log.record(name) } }
        #expect(test.pendingLabels == ["a", "b", "c"])
        #expect(log.events.isEmpty)
        #expect(try test.runOne())
        #expect(log.events == ["a"])
        #expect(test.pendingLabels == ["b", "c"])
        #expect(try test.runOne())
        #expect(try test.runOne())
        #expect(try !test.runOne())
        #expect(log.events == ["a", "b", "c"])
        #expect(test.pendingCount == 0)
    }

    @Test("work an item posts waits for the next step; runUntilIdle runs it all and stays paused")
    func runUntilIdle() throws {
        let test = try TestThread(name: "kit-idle", paused: true)
        defer { test.thread.stop() }
        let log = Recorder<String>()
        let thread = test.thread
        try thread.perform(label: "outer") {
            log.record("outer")
            try? thread.perform(label: "inner") { log.record("inner") }
        }
        #expect(try test.runOne())
        #expect(test.pendingLabels == ["inner"])
        try test.runUntilIdle()
        #expect(log.events == ["outer", "inner"])
        #expect(test.isPaused)
        try thread.perform(label: "next") { log.record("next") }
        #expect(test.pendingLabels == ["next"])
    }

    @Test("FIFO per producer across producers, on a paused thread stepped to the end (contract test)")
    func fifoPerProducer() async throws {
        let test = try TestThread(name: "kit-fifo", paused: true)
        defer { test.thread.stopAtTestEnd() }
        let thread = test.thread
        let log = Recorder<(Int, Int)>()
        await withTaskGroup(of: Void.self) { group in
            for producer in 0..<4 {
                group.addTask {
                    for index in 0..<250 { try? thread.perform { log.record((producer, index)) } }
                }
            }
        }
        #expect(test.pendingCount == 1000)
        try test.runUntilIdle()
        for producer in 0..<4 {
            #expect(log.events.filter { $0.0 == producer }.map(\.1) == Array(0..<250))
        }
    }

    @Test("unpausing lets the thread run freely again")
    func unpause() throws {
        let test = try TestThread(name: "kit-unpause", paused: true)
        defer { test.thread.stop() }
        let done = Latch()
        try test.thread.perform { done.countDown() }
        #expect(test.pendingCount == 1)
        test.isPaused = false
        #expect(done.wait())
        // And sync works on a running kit thread as on any other.
        #expect(try test.thread.sync { 42 } == 42)
    }

    @Test("stop(.drain) on a paused thread runs the queued work; stop(.discard) drops it, telling waiters")
    func stopDrainsOrDiscards() throws {
        let drained = try TestThread(name: "kit-drain", paused: true)
        let log = Recorder<String>()
        for name in ["a", "b"] { try drained.thread.perform { log.record(name) } }
        drained.thread.stop(pending: .drain)
        #expect(log.events == ["a", "b"])

        let discarded = try TestThread(name: "kit-discard", paused: true)
        let waiting = try discarded.thread.submit(label: "x") { log.record("x") }
        #expect(discarded.pendingLabels == ["x"])
        discarded.thread.stop(pending: .discard)
        #expect(waiting.state == .discarded)
        #expect(log.events == ["a", "b"])
    }

    @Test("a timer falling due while the paused thread waits between items runs, the queue stays")
    func timerWhilePaused() throws {
        let test = try TestThread(name: "kit-timer-paused", paused: true)
        defer { test.thread.stop() }
        let log = Recorder<String>()
        try test.thread.perform(label: "queued") { log.record("queued") }
        try test.thread.perform(after: .seconds(1)) { log.record("timer") }
        #expect(test.pendingCount == 1)
        try test.advance(by: .seconds(1))
        #expect(log.events == ["timer"])
        #expect(test.pendingLabels == ["queued"])
        try test.runUntilIdle()
        #expect(log.events == ["timer", "queued"])
    }
}
