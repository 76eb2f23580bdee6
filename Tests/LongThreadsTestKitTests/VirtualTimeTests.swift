import Foundation
import LongThreads
import LongThreadsTestKit
import LongThreadsTestSupport
import Testing

/// Real time a test of 30 virtual seconds may take at most: far below 30 s, with room for a
/// loaded machine running the suites in parallel (about 10 ms alone; 2.2 s seen under load).
private let quick = Duration.seconds(10)

@Suite("Test kit: virtual time")
struct VirtualTimeTests {
    @Test("perform(after:) runs when the clock is advanced to its deadline, not before, in real milliseconds")
    func delayedWork() throws {
        let started = ContinuousClock.now
        let test = try TestThread(name: "kit-after")
        defer { test.thread.stop() }
        let log = Recorder<String>()
        try test.thread.perform(after: .seconds(30)) { log.record("30s") }
        try test.advance(by: .seconds(29))
        #expect(log.events.isEmpty)
        try test.advance(by: .seconds(1))
        #expect(log.events == ["30s"])
        #expect(test.clock.elapsed == .seconds(30))
        #expect(ContinuousClock.now - started < quick)
    }

    @Test("deadlines run in deadline order, FIFO among equal deadlines, past ones first (the contract test, on a kit thread)")
    func deadlineOrder() throws {
        let test = try TestThread(name: "kit-deadlines")
        defer { test.thread.stop() }
        let log = Recorder<String>()
        let start = test.clock.now + .seconds(5)
        let later = start + .seconds(20)
        try test.thread.perform(at: later) { log.record("later") }
        for index in 0..<100 { try test.thread.perform(at: start) { log.record("at\(index)") } }
        try test.thread.perform(at: start - .seconds(2)) { log.record("earlier") }
        try test.thread.perform(after: .seconds(-1)) { log.record("past") }
        #expect(test.nextDeadline == test.clock.now - .seconds(1))
        try test.runUntilIdle()
        #expect(log.events.isEmpty, "nothing is due before the clock moves, a past deadline included")
        try test.advance(by: .zero)
        #expect(log.events == ["past"])
        try test.advance(by: .seconds(25))
        #expect(log.events == ["past", "earlier"] + (0..<100).map { "at\($0)" } + ["later"])
        #expect(test.nextDeadline == nil)
    }

    @Test("work due at a deadline runs before later deadlines, and work it schedules inside the interval runs too")
    func cascade() throws {
        let test = try TestThread(name: "kit-cascade")
        defer { test.thread.stop() }
        let log = Recorder<String>()
        let thread = test.thread
        let clock = test.clock
        try thread.perform(after: .seconds(10)) {
            log.record("a@\(clock.elapsed)")
            _ = try? thread.perform(after: .seconds(5)) { log.record("c@\(clock.elapsed)") }
            try? thread.perform { log.record("queued@\(clock.elapsed)") }
        }
        try thread.perform(after: .seconds(12)) { log.record("b@\(clock.elapsed)") }
        try test.advance(by: .seconds(60))
        #expect(log.events == ["a@10.0 seconds", "queued@10.0 seconds", "b@12.0 seconds", "c@15.0 seconds"])
        #expect(clock.elapsed == .seconds(60))
    }

    @Test("a repeating timer fires once per interval of virtual time, and stops when cancelled")
    func repeatingTimer() throws {
        let test = try TestThread(name: "kit-repeat")
        defer { test.thread.stop() }
        let ticks = Counter()
        let timer = try test.thread.schedule(every: .seconds(1)) { _ in ticks.increment() }
        try test.advance(by: .milliseconds(999))
        #expect(ticks.value == 0)
        try test.advance(by: .milliseconds(1))
        #expect(ticks.value == 1)
        try test.advance(by: .seconds(3600))
        #expect(ticks.value == 3601)
        timer.cancel()
        try test.advance(by: .seconds(10))
        #expect(ticks.value == 3601)
    }

    @Test("sync(timeout:) times out when the clock passes the timeout, and the work never runs")
    func syncTimeout() async throws {
        let started = ContinuousClock.now
        let test = try TestThread(name: "kit-timeout", paused: true)
        defer { test.thread.stopAtTestEnd(pending: .discard) }
        let thread = test.thread
        let ran = Counter()
        let caller = Task {
            try await offThePool { () -> LongThreadError? in
                do {
                    try thread.sync(timeout: .seconds(30), label: "slow") { ran.increment() }
                    return nil
                } catch {
                    return error as? LongThreadError
                }
            }
        }
        // Paused: the work waits in the queue; the caller waits on the clock.
        #expect(await eventually { test.pendingLabels == ["slow"] && test.clock.nextDeadline != nil })
        try test.advance(by: .seconds(29))
        #expect(test.pendingCount == 1)
        try test.advance(by: .seconds(1))
        #expect(try await caller.value == .timedOut)
        // Taken back: when the thread gets to it, it passes over it.
        try test.runUntilIdle()
        #expect(ran.value == 0)
        #expect(ContinuousClock.now - started < quick)
    }

    @Test("perform(waitUntilDone:timeout:) that is answered in time returns, and its timeout leaves the clock")
    func answeredInTime() throws {
        let test = try TestThread(name: "kit-answered")
        defer { test.thread.stop() }
        let ran = Counter()
        try test.thread.perform(waitUntilDone: true, timeout: .seconds(30)) { ran.increment() }
        #expect(ran.value == 1)
        #expect(test.clock.nextDeadline == nil)
    }

    @Test("threads sharing a clock run their deadlines in one order")
    func sharedClock() throws {
        let clock = TestClock()
        let first = try TestThread(name: "kit-shared-1", clock: clock)
        let second = try TestThread(name: "kit-shared-2", clock: clock)
        defer {
            first.thread.stop()
            second.thread.stop()
        }
        let log = Recorder<String>()
        try first.thread.perform(after: .seconds(3)) { log.record("first@3") }
        try second.thread.perform(after: .seconds(1)) { log.record("second@1") }
        try first.thread.perform(after: .seconds(2)) { log.record("first@2") }
        try clock.advance(by: .seconds(3))
        #expect(log.events == ["second@1", "first@2", "first@3"])
    }

    @Test("a stop cancels timers still waiting on the clock, as on the real one")
    func stopCancelsTimers() throws {
        let test = try TestThread(name: "kit-stop-timers")
        let log = Recorder<String>()
        let timer = try test.thread.perform(after: .seconds(1)) { log.record("late") }
        test.thread.stop()
        #expect(timer.isCancelled)
        try test.clock.advance(by: .seconds(2))
        #expect(log.events.isEmpty)
    }
}
