import Foundation
import LongThreads
import LongThreadsTestKit
import LongThreadsTestSupport
import Testing

/// What a test reads of a thread's queue, and of a repeating timer's first delay, on virtual time.
@Suite("Test kit: reading the queue from any closure")
struct ReadingTheQueueTests {
    @Test("pendingLabels and pendingCount read in non-throwing closures; a stopped thread has [] and 0; a busy one nil")
    func readableAnywhere() throws {
        let test = try TestThread(name: "kit-read", paused: true)
        try test.thread.perform(label: "a") {}
        try test.thread.perform(label: "b") {}
        let read: () -> [String?]? = { test.pendingLabels } // a non-throwing closure
        #expect(read() == ["a", "b"])
        #expect(test.pendingCount == 2)
        test.thread.stop(pending: .discard)
        #expect(test.pendingLabels == [])
        #expect(test.pendingCount == 0)

        // Busy past its settle timeout: the queue cannot be read whole.
        let busy = try TestThread(name: "kit-busy", settleTimeout: .milliseconds(50))
        let gate = Latch()
        let started = Latch()
        try busy.thread.perform { started.countDown(); _ = gate.wait() }
        #expect(started.wait())
        #expect(busy.pendingLabels == nil)
        #expect(busy.pendingCount == nil)
        gate.countDown()
        busy.thread.stop()
    }

    @Test("schedule(every:initialDelay:) fires at the initial delay, then every interval from there")
    func initialDelayOnVirtualTime() throws {
        let test = try TestThread(name: "kit-initial-delay")
        defer { test.thread.stop() }
        let fires = Recorder<Duration>()
        try test.thread.schedule(every: .seconds(10), initialDelay: .seconds(1)) { _ in fires.record(test.clock.elapsed) }
        try test.advance(by: .seconds(1))
        #expect(fires.events == [.seconds(1)])
        try test.advance(by: .seconds(9))
        #expect(fires.events == [.seconds(1)], "the next fire is at 11 s, on the grid of the first")
        try test.advance(by: .seconds(1))
        #expect(fires.events == [.seconds(1), .seconds(11)])
    }
}
