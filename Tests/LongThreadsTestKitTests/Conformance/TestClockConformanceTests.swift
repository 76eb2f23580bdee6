import Foundation
import LongThreads
import LongThreadsTestKit
import LongThreadsTestSupport
import Testing

/// swift-clocks' `Tests/ClocksTests/TestClocksTests.swift` (pointfreeco/swift-clocks), on a
/// `TestThread` and its `TestClock`. The vocabulary maps as:
/// - `clock.sleep(for:)` / `sleep(until:)` in a task is `run(after:)` / `run(at:)` awaited in a
///   task: the task resumes once the clock reaches the deadline. A task that sleeps again after
///   waking prefers the thread as its executor, so that its next sleep is scheduled before the
///   advance moves on (swift-clocks yields to the task instead: `Task.megaYield()`).
/// - `advance(by:)` / `advance(to:)` are the same calls; `run()` is `runClock` below (advance to
///   each next deadline until none is left): the kit has no `run()` of its own.
/// - `checkSuspension()` throwing `SuspensionError` is `nextDeadline != nil`.
///
/// Not ported: `testRunWithTimeout` (Darwin-only, `XCTExpectFailure` on `run(timeout:)` with an
/// unbounded sleep loop; the kit's bound is different: a stepping call throws
/// `TestThreadError.stillBusy` when the *thread* stays busy past its settle timeout, and an
/// advance to a finite instant always ends). `testSleepUntilExactlyNow` is ported without its real
/// 30-second sleep (the point is that work for the clock's now waits for an advance).
@Suite("Conformance: swift-clocks TestClockTests on a TestThread")
struct TestClockConformanceTests {
    /// swift-clocks' `run()`: advances to each deadline in turn until nothing waits on the clock.
    private func runClock(_ clock: TestClock) throws {
        while let next = clock.nextDeadline { try clock.advance(to: max(next, clock.now)) }
    }

    /// Waits until something waits on `clock` (a task's sleep was scheduled).
    private func suspended(_ clock: TestClock) async -> Bool {
        await eventually { clock.nextDeadline != nil }
    }

    @Test("testAdvance")
    func advance() async throws {
        let test = try TestThread(name: "clocks-advance")
        let thread = test.thread
        let finished = Recorder<Bool>()
        let task = Task { try await thread.run(after: .seconds(1)) { finished.record(true) } }
        #expect(await suspended(test.clock))
        #expect(finished.events.isEmpty)
        try test.advance(by: .seconds(1))
        #expect(finished.events == [true])
        try await task.value
        #expect(test.clock.nextDeadline == nil) // tearDown: checkSuspension
        await thread.stop()
    }

    /// Five sleeps in a row from one task, each scheduled once the last woke.
    private func sleepFiveTimes(on test: TestThread) -> Task<Int, any Error> {
        let thread = test.thread
        return Task(executorPreference: thread) {
            var count = 0
            for _ in 0..<5 {
                try await thread.run(after: .seconds(1)) {}
                count += 1
            }
            return count
        }
    }

    @Test("testAdvanceWithReentrantUnitsOfWork")
    func advanceWithReentrantUnitsOfWork() async throws {
        let test = try TestThread(name: "clocks-reentrant-advance")
        let task = sleepFiveTimes(on: test)
        #expect(await suspended(test.clock))
        try test.advance(by: .seconds(5))
        #expect(try await task.value == 5)
        #expect(test.clock.nextDeadline == nil)
        await test.thread.stop()
    }

    @Test("testRun")
    func run() async throws {
        let test = try TestThread(name: "clocks-run")
        let thread = test.thread
        let finished = Recorder<Bool>()
        let task = Task { try await thread.run(after: .seconds(1)) { finished.record(true) } }
        #expect(await suspended(test.clock))
        #expect(finished.events.isEmpty)
        try runClock(test.clock)
        #expect(finished.events == [true])
        try await task.value
        await thread.stop()
    }

    @Test("testRunMultipleUnitsOfWork")
    func runMultipleUnitsOfWork() throws {
        let test = try TestThread(name: "clocks-run-timer")
        defer { test.thread.stop() }
        let ticks = Counter()
        try test.thread.schedule(every: .seconds(1)) { timer in
            ticks.increment()
            if ticks.value == 10 { timer.cancel() } // `.prefix(10)`
        }
        try runClock(test.clock)
        #expect(ticks.value == 10)
        #expect(test.clock.elapsed == .seconds(10))
    }

    @Test("testRunWithReentrantUnitsOfWork")
    func runWithReentrantUnitsOfWork() async throws {
        let test = try TestThread(name: "clocks-reentrant-run")
        let task = sleepFiveTimes(on: test)
        #expect(await suspended(test.clock))
        try runClock(test.clock)
        #expect(try await task.value == 5)
        #expect(test.clock.elapsed == .seconds(5))
        await test.thread.stop()
    }

    @Test("testCheckScheduledWork")
    func checkScheduledWork() async throws {
        let test = try TestThread(name: "clocks-check")
        let thread = test.thread
        let task = Task { try await thread.run(after: .seconds(1)) {} }
        #expect(await suspended(test.clock), "checkSuspension throws SuspensionError")
        try test.advance(by: .seconds(1))
        try await task.value
        #expect(test.clock.nextDeadline == nil, "checkSuspension passes")
        await thread.stop()
    }

    @Test("testCooperativeCancellation")
    func cooperativeCancellation() async throws {
        let test = try TestThread(name: "clocks-cancel")
        let thread = test.thread
        let didFinish = Recorder<Bool>()
        let task = Task {
            try await thread.run(after: .seconds(1)) {}
            didFinish.record(true)
        }
        task.cancel()
        await #expect(throws: CancellationError.self) { try await task.value }
        try runClock(test.clock)
        #expect(didFinish.events.isEmpty)
        await thread.stop()
    }

    @Test("testCancellationRemovesScheduledItem")
    func cancellationRemovesScheduledItem() async throws {
        let test = try TestThread(name: "clocks-cancel-removes")
        let thread = test.thread
        let task = Task { try await thread.run(after: .seconds(1)) {} }
        #expect(await suspended(test.clock))
        task.cancel()
        await #expect(throws: CancellationError.self) { try await task.value }
        #expect(test.clock.nextDeadline == nil, "checkSuspension passes")
        await thread.stop()
    }

    @Test("testNow")
    func now() async throws {
        let test = try TestThread(name: "clocks-now")
        let thread = test.thread
        let task = Task { try await thread.run(after: .seconds(5)) {} }
        #expect(await suspended(test.clock))
        let start = test.clock.now
        try test.advance(by: .seconds(5))
        #expect(test.clock.now == start + .seconds(5))
        try await task.value
        await thread.stop()
    }

    /// The original staggers the two sleeps by half a second of real time; here the later
    /// deadline is simply scheduled first.
    @Test("testRunSorting")
    func runSorting() throws {
        let test = try TestThread(name: "clocks-sorting")
        defer { test.thread.stop() }
        let values = Recorder<Int>()
        try test.thread.perform(after: .seconds(2)) { values.record(2) }
        try test.thread.perform(after: .seconds(1)) { values.record(1) }
        try runClock(test.clock)
        #expect(values.events == [1, 2])
    }

    @Test("testSleepUntilExactlyNow")
    func sleepUntilExactlyNow() async throws {
        let test = try TestThread(name: "clocks-exactly-now")
        let thread = test.thread
        let woke = Recorder<Bool>()
        let now = test.clock.now
        let task = Task { try await thread.run(at: now) { woke.record(true) } }
        #expect(await suspended(test.clock))
        try test.runUntilIdle()
        #expect(woke.events.isEmpty, "work for the clock's now waits for an advance")
        try test.advance(by: .zero)
        #expect(woke.events == [true])
        try await task.value
        await thread.stop()
    }
}
