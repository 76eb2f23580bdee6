import Foundation
import LongThreads
import Testing

@Suite("Timers")
struct TimerTests {
    @Test("perform(after:) runs once on the thread after the delay")
    func delayedPerform() throws {
        let thread = try LongThread(name: "lt-after")
        defer { thread.stop() }
        let fired = Latch()
        let onThread = Recorder<Bool>()
        let start = ContinuousClock.now
        let timer = try thread.perform(after: .milliseconds(30)) {
            onThread.record(thread.isCurrent)
            fired.countDown()
        }
        #expect(fired.wait())
        #expect(ContinuousClock.now - start >= .milliseconds(30))
        #expect(onThread.events == [true])
        #expect(timer.isCancelled) // a one-shot timer that fired has ended
        #expect(try thread.sync { 0 } == 0)
        #expect(thread.statistics.timersFired == 1)
    }

    @Test("a cancelled timer never fires and releases its closure")
    func cancelReleases() throws {
        let thread = try LongThread(name: "lt-cancel-timer")
        defer { thread.stop() }
        weak var weakTracked: Tracked?
        let fired = Counter()
        let timer: LongThreadTimer
        do {
            let tracked = Tracked()
            weakTracked = tracked
            timer = try thread.perform(after: .milliseconds(50)) { _ = tracked; fired.increment() }
        }
        timer.cancel()
        timer.cancel()
        #expect(weakTracked == nil)
        // A later timer firing proves the loop went past the cancelled one's date.
        let later = Latch()
        try thread.perform(after: .milliseconds(80)) { later.countDown() }
        #expect(later.wait())
        #expect(fired.value == 0)
    }

    @Test("a repeating timer skips fire times missed during a long task instead of bunching them")
    func skipNotBunch() throws {
        let thread = try LongThread(name: "lt-repeat")
        defer { thread.stop() }
        let fires = Recorder<ContinuousClock.Instant>()
        let done = Latch()
        let timer = try thread.schedule(every: .milliseconds(20)) { timer in
            fires.record(.now)
            if fires.count == 2 { usleep(150_000) } // misses about 7 fire times
            if fires.count == 5 { timer.cancel(); done.countDown() }
        }
        #expect(done.wait())
        #expect(timer.isCancelled)
        let times = fires.events
        // After the long callout, the next fire comes on the grid after now, not in a burst of the
        // missed ones. Bunched, the three fires after it would come within a millisecond; on the
        // grid they span at least an interval. (Not "no two closer than half an interval": a fire
        // made late by a busy machine may come just before the next grid point, seen: 0.8 ms.)
        #expect(times.count == 5)
        #expect(times[4] - times[2] >= .milliseconds(10))
        #expect(times[2] - times[1] >= .milliseconds(150))
    }

    @Test("a stop cancels pending timers, releases their closures and tells their waiters")
    func stopCancelsTimers() async throws {
        let thread = try LongThread(name: "lt-stop-timers")
        weak var weakTracked: Tracked?
        let timer: LongThreadTimer
        do {
            let tracked = Tracked()
            weakTracked = tracked
            timer = try thread.perform(after: .seconds(60)) { _ = tracked }
        }
        let waiter = Task { try await thread.run(after: .seconds(60)) { 1 } }
        #expect(await eventually { thread.statistics.pendingTimers == 2 })
        await thread.stop()
        #expect(timer.isCancelled)
        #expect(weakTracked == nil)
        await #expect(throws: LongThreadError.discarded) { try await waiter.value }
        #expect(throws: LongThreadError.stopped) { try thread.perform(after: .zero) {} }
    }

    @Test("a timer fires while a long batch of work is still queued (the drain yields to the loop)")
    func timersRunUnderLoad() throws {
        let thread = try LongThread(name: "lt-fair")
        defer { thread.stop(pending: .discard) }
        let gate = Latch()
        let started = Latch()
        try thread.perform { started.countDown(); gate.wait() }
        #expect(started.wait())
        let ran = Counter()
        let runAtFire = Recorder<Int>()
        let fired = Latch()
        try thread.perform(after: .zero) {
            runAtFire.record(ran.value)
            fired.countDown()
        }
        // 2,000 items of 200 µs (0.4 s) queued behind the gate; they reach the thread as one batch.
        for _ in 0..<2000 { try thread.perform { usleep(200); ran.increment() } }
        gate.countDown()
        #expect(fired.wait())
        let atFire = try #require(runAtFire.events.first)
        #expect(atFire < 2000, "the timer waited for the whole batch")
    }

    @Test("a timer cancelled from another thread while its callout runs stays valid until the callout ends")
    func cancelDuringCallout() throws {
        // A cancel from this thread must not free the callout's context while the loop thread still
        // runs it, as CFRunLoopTimerInvalidate called here would; AddressSanitizer reports such a use
        // after free (scripts/test.sh).
        let thread = try LongThread(name: "lt-cancel-race")
        defer { thread.stop() }
        let inCallout = Latch()
        let release = Latch()
        let tracked = Tracked(7)
        let seen = Recorder<Int>()
        let timer = try thread.schedule(every: .milliseconds(1)) { _ in
            inCallout.countDown()
            release.wait()
            seen.record(tracked.id) // reads the callout's captured context after the cancel
        }
        #expect(inCallout.wait())
        timer.cancel()
        release.countDown()
        try thread.sync {}
        #expect(seen.events.first == 7)
    }

    @Test("stops that cancel firing timers and observers are safe, round after round (ASan checks)")
    func stopRacingCallouts() throws {
        // The window: CF has picked a due timer and released its lock, and the stop cancels the timer
        // (which must not free the callout's context) just before CF enters the callout.
        for round in 0..<300 {
            let racer = try LongThread(name: "lt-cancel-race2")
            let timers = try (0..<40).map { _ in try racer.schedule(every: .microseconds(20)) { _ in } }
            let observer = try racer.addObserver(for: .all) { _ in }
            usleep(UInt32(round % 7) * 50) // jitter, not a wait: varies where in a pass the cancel lands
            if round.isMultiple(of: 2) { timers.forEach { $0.cancel() } }
            observer.cancel()
            racer.stop()
        }
    }

    @Test("run(after:) returns the work's value")
    func runAfter() async throws {
        let thread = try LongThread(name: "lt-run-after")
        defer { thread.stopAtTestEnd() }
        #expect(try await thread.run(after: .milliseconds(10)) { thread.isCurrent })
    }
}

