import Foundation
import LongThreads
import LongThreadsTestKit
import LongThreadsTestSupport
import Testing

/// SwiftNIO's `Tests/NIOEmbeddedTests/EmbeddedEventLoopTest.swift` (apple/swift-nio), on a
/// `TestThread`. The vocabulary maps as:
/// - `execute` is `perform`; `run()` is `runUntilIdle()` on a paused thread (an
///   `EmbeddedEventLoop` runs executed work only when told to).
/// - `scheduleTask(in:)` / `scheduleTask(deadline:)` are `perform(after:)` / `perform(at:)`, their
///   futures `run(after:)`; `Scheduled.cancel()` is `LongThreadTimer.cancel()`.
/// - `advanceTime(by:)` / `advanceTime(to:)` are `advance(by:)` / `TestClock.advance(to:)` on a
///   running thread: queued work first, then each deadline in order, then the work it queued.
///   A paused thread keeps its queue across an advance (documented divergence: the test steps it).
/// - `syncShutdownGracefully()` is `stop(pending: .drain)`.
///
/// Divergences, each documented at its case:
/// - `testTaskOrdering`: cancelling a timer due at the same instant succeeds (NIO's fails, both
///   tasks having been taken); a `LongThreadTimer` whose callback has not started never runs.
/// - `testTasksScheduledDuringShutdownAreAutomaticallyCancelled`: a post after the stop began
///   throws `LongThreadError.stopped` at the call instead of returning a cancelled future.
/// - `testScheduledTasksFuturesFire` / `...Error`: futures are `async` calls, awaited in a task.
@Suite("Conformance: SwiftNIO EmbeddedEventLoopTest on a TestThread")
struct EmbeddedEventLoopConformanceTests {
    @Test("testExecuteDoesNotImmediatelyRunTasks")
    func executeDoesNotImmediatelyRunTasks() throws {
        let test = try TestThread(name: "nio-execute", paused: true)
        defer { test.thread.stop() }
        let ran = Counter()
        try test.thread.perform { ran.increment() }
        #expect(test.pendingCount == 1)
        #expect(ran.value == 0)
        try test.runUntilIdle()
        #expect(ran.value == 1)
    }

    @Test("testExecuteWillRunAllTasks")
    func executeWillRunAllTasks() throws {
        let test = try TestThread(name: "nio-all", paused: true)
        defer { test.thread.stop() }
        let runs = Counter()
        for _ in 0..<3 { try test.thread.perform { runs.increment() } }
        #expect(test.pendingCount == 3)
        #expect(runs.value == 0)
        try test.runUntilIdle()
        #expect(runs.value == 3)
    }

    @Test("testExecuteWillRunTasksAddedRecursively")
    func executeWillRunTasksAddedRecursively() throws {
        let test = try TestThread(name: "nio-recursive", paused: true)
        defer { test.thread.stop() }
        let thread = test.thread
        let log = Recorder<Int>()
        try thread.perform {
            log.record(1) // first
            try? thread.perform { log.record(3) } // third
        }
        try thread.perform { log.record(2) } // second
        #expect(log.events.isEmpty)
        try test.runUntilIdle()
        #expect(log.events == [1, 2, 3])
    }

    @Test("testTasksSubmittedAfterRunDontRun")
    func tasksSubmittedAfterRunDontRun() throws {
        let test = try TestThread(name: "nio-after-run", paused: true)
        defer { test.thread.stop() }
        let log = Recorder<String>()
        try test.thread.perform { log.record("first") }
        try test.runUntilIdle()
        try test.thread.perform { log.record("second") }
        #expect(log.events == ["first"])
        try test.runUntilIdle()
        #expect(log.events == ["first", "second"])
    }

    @Test("testShutdownGracefullyRunsTasks")
    func shutdownGracefullyRunsTasks() throws {
        let test = try TestThread(name: "nio-shutdown", paused: true)
        let ran = Counter()
        try test.thread.perform { ran.increment() }
        #expect(ran.value == 0)
        test.thread.stop(pending: .drain)
        #expect(ran.value == 1)
    }

    @Test("testCanControlTime")
    func canControlTime() throws {
        let test = try TestThread(name: "nio-time")
        defer { test.thread.stop() }
        let count = Counter()
        try test.thread.perform(after: .nanoseconds(5)) { count.increment() }
        #expect(count.value == 0)
        try test.advance(by: .nanoseconds(4))
        #expect(count.value == 0)
        try test.advance(by: .nanoseconds(1))
        #expect(count.value == 1)
        try test.advance(by: .nanoseconds(1))
        #expect(count.value == 1)
        try test.advance(by: .seconds(3600))
        #expect(count.value == 1)
    }

    @Test("testCanScheduleMultipleTasks")
    func canScheduleMultipleTasks() throws {
        let test = try TestThread(name: "nio-multiple")
        defer { test.thread.stop() }
        let sentinel = Recorder<Int>()
        for index in 1...10 {
            try test.thread.perform(after: .nanoseconds(index)) { sentinel.record(index) }
        }
        for value in 1...10 {
            #expect(sentinel.events.last ?? 0 == value - 1)
            try test.advance(by: .nanoseconds(1))
            #expect(sentinel.events.last == value)
        }
    }

    @Test("testExecutedTasksFromScheduledOnesAreRun")
    func executedTasksFromScheduledOnesAreRun() throws {
        let test = try TestThread(name: "nio-executed-from-scheduled")
        defer { test.thread.stop() }
        let thread = test.thread
        let sentinel = Recorder<Int>()
        try thread.perform(after: .nanoseconds(5)) {
            sentinel.record(1)
            try? thread.perform { sentinel.record(2) }
        }
        try test.advance(by: .nanoseconds(4))
        #expect(sentinel.events.isEmpty)
        try test.advance(by: .nanoseconds(1))
        #expect(sentinel.events == [1, 2])
    }

    @Test("testScheduledTasksFromScheduledTasksProperlySchedule")
    func scheduledTasksFromScheduledTasksProperlySchedule() throws {
        let test = try TestThread(name: "nio-scheduled-from-scheduled")
        defer { test.thread.stop() }
        let thread = test.thread
        let sentinel = Recorder<Int>()
        try thread.perform(after: .nanoseconds(5)) {
            sentinel.record(1)
            _ = try? thread.perform(after: .nanoseconds(3)) { sentinel.record(2) }
            _ = try? thread.perform(after: .nanoseconds(5)) { sentinel.record(3) }
        }
        for (step, expected) in [(4, 0), (1, 1), (2, 1), (1, 2), (1, 2), (1, 3)] {
            try test.advance(by: .nanoseconds(step))
            #expect(sentinel.events.last ?? 0 == expected)
        }
    }

    @Test("testScheduledTasksFromExecutedTasks")
    func scheduledTasksFromExecutedTasks() throws {
        let test = try TestThread(name: "nio-scheduled-from-executed")
        defer { test.thread.stop() }
        let thread = test.thread
        let log = Recorder<Int>()
        try thread.perform {
            _ = try? thread.perform(after: .nanoseconds(5)) { log.record(2) }
            try? thread.perform { log.record(1) }
        }
        try test.advance(by: .nanoseconds(5))
        #expect(log.events == [1, 2])
    }

    @Test("testCancellingScheduledTasks")
    func cancellingScheduledTasks() throws {
        let test = try TestThread(name: "nio-cancel")
        defer { test.thread.stop() }
        let ran = Counter()
        let task = try test.thread.perform(after: .nanoseconds(10)) { ran.increment() }
        try test.thread.perform(after: .nanoseconds(5)) { task.cancel() }
        try test.advance(by: .nanoseconds(20))
        #expect(ran.value == 0, "Cancelled task ran")
    }

    @Test("testScheduledTasksFuturesFire")
    func scheduledTasksFuturesFire() async throws {
        let test = try TestThread(name: "nio-future")
        let thread = test.thread
        let fired = Recorder<Bool>()
        let task = Task { fired.record(try await thread.run(after: .nanoseconds(5)) { true }) }
        #expect(await eventually { test.nextDeadline != nil })
        try test.advance(by: .nanoseconds(4))
        #expect(fired.events.isEmpty)
        try test.advance(by: .nanoseconds(1))
        try await task.value
        #expect(fired.events == [true])
        await thread.stop()
    }

    @Test("testScheduledTasksFuturesError")
    func scheduledTasksFuturesError() async throws {
        struct EmbeddedTestError: Error, Equatable {}
        let test = try TestThread(name: "nio-future-error")
        let thread = test.thread
        let task = Task { try await thread.run(after: .nanoseconds(5)) { () throws -> Void in throw EmbeddedTestError() } }
        #expect(await eventually { test.nextDeadline != nil })
        try test.advance(by: .nanoseconds(4))
        try test.advance(by: .nanoseconds(1))
        await #expect(throws: EmbeddedTestError()) { try await task.value }
        await thread.stop()
    }

    /// Divergence: NIO's partner cancel fails (both tasks due at 5 ns were taken together) and both
    /// run; a `LongThreadTimer` cancelled before its callback starts never runs, so one of the two
    /// runs. The order NIO checks holds: executed work first, the due timers, the work they
    /// executed, then the later deadline.
    @Test("testTaskOrdering (divergence: a partner due at the same instant can be cancelled)")
    func taskOrdering() throws {
        let test = try TestThread(name: "nio-ordering")
        defer { test.thread.stop() }
        let thread = test.thread
        let log = Recorder<String>()
        let timers = Recorder<LongThreadTimer>()
        for name in ["first", "second"] {
            let timer = try thread.perform(after: .nanoseconds(5)) {
                log.record(name)
                for partner in timers.events { partner.cancel() }
                try? thread.perform { log.record("executed by \(name)") }
            }
            timers.record(timer)
        }
        try thread.perform { log.record("executed") }
        try thread.perform(after: .nanoseconds(10)) { log.record("10ns") }
        try test.advance(by: .nanoseconds(10))
        let events = log.events
        #expect(events.count == 4)
        #expect(events.first == "executed")
        #expect(events.dropFirst().first.map { ["first", "second"].contains($0) } == true)
        #expect(events.dropFirst(2).first == "executed by \(events.dropFirst().first ?? "")")
        #expect(events.last == "10ns")
    }

    @Test("testCancelledScheduledTasksDoNotHoldOnToRunClosure")
    func cancelledScheduledTasksDoNotHoldOnToRunClosure() throws {
        final class Thing: Sendable {
            let deallocated: Latch
            init(_ deallocated: Latch) { self.deallocated = deallocated }
            deinit { deallocated.countDown() }
        }
        let test = try TestThread(name: "nio-cancel-release")
        defer { test.thread.stop() }
        let deallocated = Latch()
        let scheduled: LongThreadTimer = try {
            let thing = Thing(deallocated)
            return try test.thread.perform(after: .seconds(3600)) { Issue.record("this should definitely not run: \(thing)") }
        }()
        scheduled.cancel()
        #expect(deallocated.wait())
        #expect(scheduled.isCancelled)
    }

    @Test("testShutdownCancelsFutureScheduledTasks")
    func shutdownCancelsFutureScheduledTasks() throws {
        let test = try TestThread(name: "nio-shutdown-timers")
        let runs = Counter()
        let first = try test.thread.perform(after: .seconds(1)) { runs.increment() }
        let second = try test.thread.perform(after: .seconds(2)) { runs.increment() }
        #expect(runs.value == 0)
        try test.advance(by: .seconds(1))
        #expect(runs.value == 1)
        test.thread.stop(pending: .drain)
        #expect(runs.value == 1)
        try test.advance(by: .seconds(1))
        #expect(runs.value == 1)
        try test.clock.advance(to: test.clock.now + .seconds(86_400 * 365))
        #expect(runs.value == 1)
        #expect(first.isCancelled) // a one-shot timer that fired has ended too
        #expect(second.isCancelled)
    }

    /// Divergence: the child posted once the stop began is refused at the call
    /// (`LongThreadError.stopped`) instead of being handed back as a cancelled future.
    @Test("testTasksScheduledDuringShutdownAreAutomaticallyCancelled (divergence: refused at the post)")
    func tasksScheduledDuringShutdownAreRefused() throws {
        let test = try TestThread(name: "nio-schedule-during-shutdown")
        let thread = test.thread
        let runs = Counter()
        let children = Recorder<LongThreadError?>()
        try thread.perform(at: test.clock.now + .nanoseconds(1)) {
            runs.increment()
            thread.stop(waitUntilDone: false)
            do {
                try thread.perform(after: .zero) { runs.increment() }
                children.record(nil)
            } catch {
                children.record(error as? LongThreadError)
            }
        }
        try test.clock.advance(to: test.clock.now + .nanoseconds(1))
        thread.stop()
        #expect(runs.value == 1)
        #expect(children.events == [.stopped])
    }

    @Test("testAdvanceTimeToDeadline")
    func advanceTimeToDeadline() throws {
        let test = try TestThread(name: "nio-advance-to")
        defer { test.thread.stop() }
        let deadline = test.clock.now + .seconds(42)
        let runs = Counter()
        try test.thread.perform(at: deadline) { runs.increment() }
        try test.clock.advance(to: deadline)
        #expect(runs.value == 1)
    }

    @Test("testWeCantTimeTravelByAdvancingTimeToThePast")
    func cannotTimeTravelToThePast() throws {
        let test = try TestThread(name: "nio-no-time-travel")
        defer { test.thread.stop() }
        let start = test.clock.now
        let runs = Counter()
        try test.thread.perform(at: start + .seconds(42)) { runs.increment() }
        try test.clock.advance(to: start + .seconds(40))
        #expect(runs.value == 0)
        try test.clock.advance(to: start - .seconds(3600))
        #expect(runs.value == 0)
        #expect(test.clock.now == start + .seconds(40))
        try test.advance(by: .seconds(2))
        #expect(runs.value == 1)
    }

    @Test("testExecuteInOrder")
    func executeInOrder() throws {
        let test = try TestThread(name: "nio-execute-order", paused: true)
        defer { test.thread.stop() }
        let log = Recorder<Int>()
        for index in 0..<3 { try test.thread.perform { log.record(index) } }
        try test.runUntilIdle()
        #expect(log.events == [0, 1, 2])
    }

    @Test("testScheduledTasksInOrder")
    func scheduledTasksInOrder() throws {
        let test = try TestThread(name: "nio-scheduled-order")
        defer { test.thread.stop() }
        let log = Recorder<String>()
        try test.thread.perform(after: .seconds(1)) { log.record("1s, first") }
        try test.thread.perform(after: .milliseconds(1)) { log.record("1ms") }
        try test.thread.perform(after: .seconds(1)) { log.record("1s, second") }
        try test.advance(by: .seconds(1))
        #expect(log.events == ["1ms", "1s, first", "1s, second"])
    }

    @Test("testCurrentTime")
    func currentTime() throws {
        let clock = TestClock()
        let start = clock.now
        try clock.advance(to: start + .nanoseconds(42))
        #expect(clock.now == start + .nanoseconds(42))
        try clock.advance(by: .nanoseconds(42))
        #expect(clock.now == start + .nanoseconds(84))
    }

    @Test("testScheduleRepeatedTask")
    func scheduleRepeatedTask() throws {
        let test = try TestThread(name: "nio-repeated")
        defer { test.thread.stop() }
        let counter = Counter()
        try test.thread.schedule(every: .seconds(1)) { timer in
            guard counter.value < 10 else {
                timer.cancel()
                return
            }
            counter.increment()
        }
        #expect(counter.value == 0)
        try test.advance(by: .seconds(1))
        #expect(counter.value == 1)
        try test.advance(by: .seconds(9))
        #expect(counter.value == 10)
    }
}
