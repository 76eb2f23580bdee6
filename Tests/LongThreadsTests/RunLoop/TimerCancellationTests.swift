import Foundation
import LongThreads
import LongThreadsTestSupport
import Testing

@Suite("Cancelling timers")
struct TimerCancellationTests {
    @Test("a cancelled run(after:) releases its timer at once, not at its deadline")
    func cancelledRunAfterReleasesTimer() async throws {
        let thread = try LongThread(name: "lt-cancel-after")
        defer { thread.stopAtTestEnd() }
        let waiters = (0..<100).map { _ in Task { try await thread.run(after: .seconds(3600)) { 1 } } }
        #expect(await eventually { thread.statistics.pendingTimers == 100 })
        for waiter in waiters { waiter.cancel() }
        for waiter in waiters {
            await #expect(throws: CancellationError.self) { try await waiter.value }
        }
        #expect(await eventually { thread.statistics.pendingTimers == 0 })
    }

    @Test("a cancelled run(at:) releases its timer at once, not at its deadline")
    func cancelledRunAtReleasesTimer() async throws {
        let thread = try LongThread(name: "lt-cancel-at")
        defer { thread.stopAtTestEnd() }
        let deadline = ContinuousClock.now + .seconds(3600)
        // Distinct deadlines (a timer each) and one shared one (a timer for 50 items).
        let waiters = (0..<100).map { index in
            Task { try await thread.run(at: deadline + .milliseconds(index % 2 == 0 ? index + 1 : 0)) { 1 } }
        }
        #expect(await eventually { thread.statistics.pendingTimers == 51 })
        for waiter in waiters { waiter.cancel() }
        for waiter in waiters {
            await #expect(throws: CancellationError.self) { try await waiter.value }
        }
        #expect(await eventually { thread.statistics.pendingTimers == 0 })
    }

    @Test("cancelled run(at:) closures are released at once")
    func cancelledRunAtReleasesClosure() async throws {
        let thread = try LongThread(name: "lt-cancel-at-closure")
        defer { thread.stopAtTestEnd() }
        var canary: Canary? = Canary()
        let watch = WeakBox(canary!)
        let waiter = Task { [canary] in try await thread.run(at: .now + .seconds(3600)) { canary?.touch() } }
        canary = nil
        #expect(await eventually { thread.statistics.pendingTimers == 1 })
        waiter.cancel()
        await #expect(throws: CancellationError.self) { try await waiter.value }
        #expect(await eventually { watch.value == nil && thread.statistics.pendingTimers == 0 })
    }

    @Test("a cancelled perform(at:) releases its timer and closure at once; a bucket's other items keep theirs")
    func cancelledPerformAtReleasesTimer() throws {
        let thread = try LongThread(name: "lt-cancel-perform-at")
        defer { thread.stop() }
        let deadline = ContinuousClock.now + .seconds(3600)
        var canary: Canary? = Canary()
        let watch = WeakBox(canary!)
        let alone = try thread.perform(at: deadline) { [canary] in canary?.touch() }
        canary = nil
        let shared = deadline + .seconds(1)
        let first = try thread.perform(at: shared) {}
        let second = try thread.perform(at: shared) {}
        #expect(thread.statistics.pendingTimers == 2)
        #expect(alone.cancel())
        #expect(watch.value == nil)
        #expect(thread.statistics.pendingTimers == 1)
        #expect(first.cancel())
        #expect(thread.statistics.pendingTimers == 1, "the second item still waits on the shared timer")
        #expect(second.cancel())
        #expect(thread.statistics.pendingTimers == 0)
        // A bucket emptied by cancels takes new work again, under a new timer: repost at the
        // very deadline whose bucket was emptied.
        let again = try thread.perform(at: shared) {}
        #expect(thread.statistics.pendingTimers == 1, "the emptied bucket's deadline has a timer again")
        #expect(again.state == .waiting)
        #expect(again.cancel())
        #expect(thread.statistics.pendingTimers == 0)
        // And one that is due runs: a past deadline, emptied and reposted while the thread is busy.
        let busy = Latch()
        let gate = Latch()
        try thread.perform {
            busy.countDown()
            gate.wait()
        }
        #expect(busy.wait())
        let past = ContinuousClock.now - .seconds(1)
        #expect(try thread.perform(at: past) {}.cancel())
        let ran = Latch()
        try thread.perform(at: past) { ran.countDown() }
        gate.countDown()
        #expect(ran.wait())
    }

    @Test("cancel(then:) while the callback runs: the notice comes once it returned, and no callback follows")
    func cancelThenWhileRunning() throws {
        let thread = try LongThread(name: "lt-cancel-then")
        defer { thread.stop() }
        let log = Recorder<String>()
        let inCallback = Latch()
        let release = Latch()
        let noticed = Latch()
        let timer = try thread.schedule(every: .milliseconds(1)) { _ in
            log.record("callback")
            inCallback.countDown()
            release.wait()
            log.record("returned")
        }
        #expect(inCallback.wait())
        timer.cancel {
            log.record("notice")
            noticed.countDown()
        }
        #expect(timer.isCancelled)
        #expect(!noticed.isOpen, "the callback still runs")
        release.countDown()
        #expect(noticed.wait())
        try thread.sync {} // a callback scheduled after the notice would have run by now
        #expect(log.events == ["callback", "returned", "notice"])
    }

    @Test("cancel(then:) with no callback running notifies at once; from inside the callback, after it returns")
    func cancelThenIdleAndFromInside() throws {
        let thread = try LongThread(name: "lt-cancel-then-idle")
        defer { thread.stop() }
        let idle = try thread.schedule(every: .seconds(3600)) { _ in }
        let atOnce = Counter()
        idle.cancel { atOnce.increment() }
        #expect(atOnce.value == 1)
        idle.cancel { atOnce.increment() } // already cancelled: at once again
        #expect(atOnce.value == 2)
        let log = Recorder<String>()
        let noticed = Latch()
        try thread.schedule(every: .milliseconds(1)) { timer in
            timer.cancel {
                log.record("notice")
                noticed.countDown()
            }
            log.record("callback returns")
        }
        #expect(noticed.wait())
        #expect(log.events == ["callback returns", "notice"])
    }

    @Test("cancelAndWait() returns once the running callback returned")
    func cancelAndWaitWhileRunning() async throws {
        let thread = try LongThread(name: "lt-cancel-wait")
        defer { thread.stopAtTestEnd() }
        let log = Recorder<String>()
        let inCallback = Latch()
        let release = Latch()
        let timer = try thread.schedule(every: .milliseconds(1)) { _ in
            inCallback.countDown()
            release.wait()
            log.record("callback returns")
        }
        #expect(await inCallback.value())
        let waiter = Task {
            await timer.cancelAndWait()
            log.record("cancelAndWait returned")
        }
        #expect(await eventually { timer.isCancelled })
        // The callback is held: an early return would be logged within this bounded wait.
        #expect(await eventually(timeout: .milliseconds(200)) { !log.events.isEmpty } == false)
        release.countDown()
        await waiter.value
        #expect(log.events == ["callback returns", "cancelAndWait returned"])
    }
}
