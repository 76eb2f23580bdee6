import Foundation
import LongThreads
import LongThreadsTestSupport
import Testing

@Suite("Deadlines and timeouts: perform(at:), run(at:), sync(timeout:), perform(waitUntilDone:timeout:)")
struct DeadlineTests {
    @Test("work runs in deadline order, and FIFO among equal deadlines")
    func deadlineOrder() throws {
        let thread = try LongThread(name: "lt-deadline")
        defer { thread.stop() }
        let log = Recorder<String>()
        let start = ContinuousClock.now + .milliseconds(50)
        let later = start + .milliseconds(20)
        try thread.perform(at: later) { log.record("later") }
        for index in 0..<100 { try thread.perform(at: start) { log.record("at\(index)") } }
        try thread.perform(at: start - .milliseconds(20)) { log.record("earlier") }
        let done = Latch()
        try thread.perform(at: later + .milliseconds(20)) { done.countDown() }
        #expect(done.wait())
        #expect(log.events == ["earlier"] + (0..<100).map { "at\($0)" } + ["later"])
        #expect(ContinuousClock.now >= later)
    }

    @Test("deadlines already passed run in deadline order, not in posting order (as NIO and Android order them)")
    func pastDeadlinesInDeadlineOrder() throws {
        let thread = try LongThread(name: "lt-deadline-past")
        defer { thread.stop() }
        let gate = Latch()
        try thread.occupy(until: gate)
        let log = Recorder<Int>()
        let now = ContinuousClock.now
        try thread.perform(at: now - .milliseconds(10)) { log.record(2) }
        try thread.perform(at: now - .milliseconds(30)) { log.record(0) }
        try thread.perform(at: now - .milliseconds(20)) { log.record(1) }
        // Its sibling: a delay below zero is a deadline already passed, ordered as one.
        try thread.perform(after: .milliseconds(-5)) { log.record(3) }
        try thread.perform(after: .seconds(-1)) { log.record(-1) }
        let done = Latch()
        try thread.perform(at: now + .milliseconds(1)) { done.countDown() }
        gate.countDown()
        #expect(done.wait())
        #expect(log.events == [-1, 0, 1, 2, 3])
    }

    @Test("run(at:) with deadlines already passed: deadline order too")
    func runAtPastDeadlinesInDeadlineOrder() async throws {
        let thread = try LongThread(name: "lt-run-at-past")
        defer { thread.stopAtTestEnd() }
        let gate = Latch()
        try thread.occupy(until: gate)
        let log = Recorder<Int>()
        let now = ContinuousClock.now
        var waits: [Task<Void, any Error>] = []
        for (posted, (value, ago)) in [(2, 10), (0, 30), (1, 20)].enumerated() {
            waits.append(Task { try await thread.run(at: now - .milliseconds(ago)) { log.record(value) } })
            // Each waits in the thread's timers before the next is posted: posting order is known.
            #expect(await eventually { thread.statistics.pendingTimers == posted + 1 })
        }
        gate.countDown()
        for wait in waits { try await wait.value }
        #expect(log.events == [0, 1, 2])
    }

    @Test("work due in the past runs at once; a deadline item can be cancelled until it runs")
    func pastAndCancel() throws {
        let thread = try LongThread(name: "lt-deadline-cancel")
        defer { thread.stop() }
        let ran = Recorder<String>()
        let late = try thread.perform(at: .now + .seconds(30)) { ran.record("late") }
        let done = Latch()
        try thread.perform(at: .now - .seconds(1)) {
            ran.record("past")
            done.countDown()
        }
        #expect(done.wait())
        #expect(late.cancel())
        #expect(late.state == .cancelled)
        #expect(ran.events == ["past"])
    }

    @Test("run(at:) returns the value; a stop before the deadline throws .discarded")
    func runAt() async throws {
        let thread = try LongThread(name: "lt-run-at")
        #expect(try await thread.run(at: .now + .milliseconds(5)) { 7 } == 7)
        let waiting = Task { try await thread.run(at: .now + .seconds(30)) { 8 } }
        #expect(await eventually { thread.statistics.pendingTimers == 1 })
        thread.stop(waitUntilDone: false)
        await #expect(throws: LongThreadError.discarded) { try await waiting.value }
        #expect(await thread.waitUntilExit())
        #expect(throws: LongThreadError.stopped) { try thread.perform(at: .now) {} }
    }

    @Test("sync(timeout:) that expires before the work started: .timedOut, and the work never runs")
    func syncTimeoutBeforeStart() throws {
        let thread = try LongThread(name: "lt-sync-timeout")
        defer { thread.stop() }
        let gate = Latch()
        try thread.occupy(until: gate)
        let ran = Counter()
        #expect(throws: LongThreadError.timedOut) {
            try thread.sync(timeout: .milliseconds(20)) { ran.increment() }
        }
        #expect(throws: LongThreadError.timedOut) {
            try thread.perform(waitUntilDone: true, timeout: .milliseconds(20)) { ran.increment() }
        }
        gate.countDown()
        try thread.perform(waitUntilDone: true) {}
        #expect(ran.value == 0)
    }

    @Test("sync(timeout:) that expires after the work started: .timedOut, the work completes, its result is dropped")
    func syncTimeoutAfterStart() throws {
        let thread = try LongThread(name: "lt-sync-timeout-late")
        defer { thread.stop() }
        for useSync in [true, false] {
            let started = Latch()
            let proceed = Latch()
            let finished = Latch()
            // The work holds the thread until the caller has given up; the timeout is long enough
            // for the work to have started by then even on a loaded machine.
            #expect(throws: LongThreadError.timedOut) {
                if useSync {
                    _ = try thread.sync(timeout: .milliseconds(500)) { () -> Int in
                        started.countDown()
                        proceed.wait()
                        finished.countDown()
                        return 1
                    }
                } else {
                    try thread.perform(waitUntilDone: true, timeout: .milliseconds(500)) {
                        started.countDown()
                        proceed.wait()
                        finished.countDown()
                    }
                }
            }
            #expect(started.isOpen)
            proceed.countDown()
            #expect(finished.wait())
        }
    }

    @Test("sync(timeout:) returns the value and rethrows the error when the work is in time")
    func syncInTime() throws {
        let thread = try LongThread(name: "lt-sync-in-time")
        defer { thread.stop() }
        #expect(try thread.sync(timeout: .seconds(10)) { 6 * 7 } == 42)
        #expect(throws: SomeError()) { try thread.sync(timeout: .seconds(10)) { throw SomeError() } }
        try thread.perform(waitUntilDone: true, timeout: .seconds(10)) {}
        // On the thread itself: inline, no timeout.
        #expect(try thread.sync { try thread.sync(timeout: .zero) { 5 } } == 5)
    }
}
