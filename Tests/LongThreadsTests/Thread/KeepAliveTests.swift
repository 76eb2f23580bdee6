import CoreFoundation
import Foundation
import LongThreads
import Testing

@Suite("The loop never ends by itself")
struct KeepAliveTests {
    @Test("a task calling CFRunLoopStop does not end the thread")
    func cfRunLoopStopFromTask() throws {
        let thread = try LongThread(name: "lt-cfstop")
        defer { thread.stop() }
        try thread.sync { CFRunLoopStop(CFRunLoopGetCurrent()) }
        try thread.perform { CFRunLoopStop(CFRunLoopGetCurrent()) }
        #expect(try thread.sync { 1 } == 1)
        #expect(thread.isRunning)
    }

    @Test("a nested run that returns does not end the thread")
    func nestedRunReturns() throws {
        let thread = try LongThread(name: "lt-nested-ret")
        defer { thread.stop() }
        try thread.sync { _ = RunLoop.current.run(mode: .default, before: Date().addingTimeInterval(0.01)) }
        try thread.sync { RunLoop.current.run(until: Date().addingTimeInterval(0.01)) }
        #expect(try thread.sync { 2 } == 2)
    }

    @Test("an idle thread with an empty default mode still serves work posted later")
    func idleThenPost() throws {
        let thread = try LongThread(name: "lt-idle-post")
        defer { thread.stop() }
        let tid = try thread.kernelThreadID()
        #expect(waitUntil { loopIsAsleep(tid) })
        let done = Latch()
        try thread.perform { done.countDown() }
        #expect(done.wait())
    }

    @Test("the seeds' opening crash made safe: a perform with waitUntilDone to a fresh thread runs")
    func seedsOpeningScenario() throws {
        // A Foundation thread whose block has returned has no run loop, and a perform that waits
        // for it crashes with NSDestinationInvalidException. A LongThread stays alive for it.
        let thread = try LongThread(name: "lt-seed")
        let log = Recorder<String>()
        try thread.perform { log.record("task A") }
        try thread.perform(waitUntilDone: true) { log.record("task B") }
        thread.stop()
        #expect(log.events == ["task A", "task B"])
        #expect(throws: LongThreadError.stopped) { try thread.perform(waitUntilDone: true) {} }
    }
}
