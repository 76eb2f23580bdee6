import Foundation
import LongThreads
import LongThreadsTestKit
import LongThreadsTestSupport
import Testing

/// A value whose destruction a test can watch.
private final class Tracked: Sendable {
    let destroyed: @Sendable () -> Void
    init(_ destroyed: @escaping @Sendable () -> Void) { self.destroyed = destroyed }
    deinit { destroyed() }
}

/// An actor pinned to a test thread, recording whether its job ran on it.
private actor PinnedToTestThread {
    let thread: LongThread
    nonisolated var unownedExecutor: UnownedSerialExecutor { thread.asUnownedSerialExecutor() }
    init(thread: LongThread) { self.thread = thread }
    func onThread() -> Bool { thread.isCurrent }
}

/// What a paused thread's gate holds and a test's faults refuse is the user's queued work only:
/// the library's own posts (a bound value's destruction) and work posted at the front of the
/// queue pass as they do on a real thread.
@Suite("Test kit: the library's own posts pass no gate or fault")
struct OwnPostTests {
    @Test("performAtFrontOfQueue runs on a paused thread without a step, ahead of the waiting items")
    func frontOfQueueIsNotHeld() throws {
        let test = try TestThread(name: "kit-front", paused: true)
        defer { test.thread.stop() }
        let log = Recorder<String>()
        let ran = Latch()
        try test.thread.perform(label: "queued") { log.record("queued") }
        #expect(test.pendingLabels == ["queued"])
        try test.thread.performAtFrontOfQueue {
            log.record("front")
            ran.countDown()
        }
        #expect(ran.wait(), "front-of-queue work was held by the gate")
        #expect(test.pendingLabels == ["queued"])
        try test.runUntilIdle()
        #expect(log.events == ["front", "queued"])
    }

    @Test("performAtFrontOfQueue runs on an idle paused thread without a step")
    func frontOfQueueOnIdleThread() throws {
        let test = try TestThread(name: "kit-front-idle", paused: true)
        defer { test.thread.stop() }
        let ran = Latch()
        try test.thread.performAtFrontOfQueue { ran.countDown() }
        #expect(ran.wait(), "front-of-queue work was held by the gate")
        #expect(test.pendingCount == 0)
    }

    @Test("a released ThreadBound value is destroyed on a paused thread before the next waiting item, as on a real one")
    func releaseIsNotHeld() throws {
        let test = try TestThread(name: "kit-release")
        defer { test.thread.stop() }
        let log = Recorder<String>()
        let destroyed = Latch()
        var value: ThreadBound<Tracked>? = try ThreadBound(on: test.thread) {
            Tracked {
                log.record("destroyed")
                destroyed.countDown()
            }
        }
        test.isPaused = true
        try test.thread.perform(label: "next") { log.record("next") }
        #expect(test.pendingLabels == ["next"])
        value = nil
        #expect(destroyed.wait(), "the value's destruction was held by the gate")
        #expect(try test.runOne())
        #expect(log.events == ["destroyed", "next"])
        _ = value
    }

    @Test("right after a release on a paused thread, the queue shows the user's work only and the value is gone")
    func pendingAfterRelease() throws {
        let test = try TestThread(name: "kit-release-pending")
        defer { test.thread.stop() }
        let destroyed = Latch()
        var value: ThreadBound<Tracked>? = try ThreadBound(on: test.thread) { Tracked { destroyed.countDown() } }
        test.isPaused = true
        try test.thread.perform(label: "next") {}
        value = nil
        // No wait on the latch: the thread settles once the library's own work has run.
        #expect(test.pendingLabels == ["next"])
        #expect(destroyed.isOpen)
        _ = value
    }

    @Test("refuseNextPost is not used up by a ThreadBound value's release: the value goes, the test's next post is refused")
    func releaseIsNotRefused() throws {
        let test = try TestThread(name: "kit-release-refuse")
        defer { test.thread.stop() }
        let destroyed = Latch()
        var value: ThreadBound<Tracked>? = try ThreadBound(on: test.thread) { Tracked { destroyed.countDown() } }
        test.refuseNextPost(with: .queueFull)
        value = nil
        #expect(destroyed.wait(), "the value's release was refused: it lives until the thread ends")
        #expect(throws: LongThreadError.queueFull) { try test.thread.perform {} }
        _ = value
    }

    @Test("refuseNextPost is not used up by an explicit release: the value goes in order, the test's next post is refused")
    func explicitReleaseIsNotRefused() throws {
        let test = try TestThread(name: "kit-explicit-release-refuse")
        defer { test.thread.stop() }
        let destroyed = Latch()
        let value = try ThreadBound(on: test.thread) { Tracked { destroyed.countDown() } }
        test.refuseNextPost(with: .queueFull)
        value.release(waitUntilDone: false)
        #expect(destroyed.wait(), "the value's release was refused: it lives until the thread ends")
        #expect(throws: LongThreadError.queueFull) { try test.thread.perform {} }
    }

    @Test("refuseNextPost is not used up by an actor's job: the job runs on the thread, the test's next post is refused")
    func jobIsNotRefused() async throws {
        let test = try TestThread(name: "kit-job-refuse")
        let actor = PinnedToTestThread(thread: test.thread)
        test.refuseNextPost(with: .stopped)
        let answers = Recorder<Bool>()
        let call = Task { answers.record(await actor.onThread()) }
        #expect(await eventually { answers.count == 1 }, "the actor's job was refused: it waits for the thread to end")
        #expect(throws: LongThreadError.stopped) { try test.thread.perform {} }
        await test.thread.stop()
        await call.value
        #expect(answers.events == [true], "the actor's job ran off its thread")
    }
}

@Suite("Test kit: advancing the clock runs queued work first")
struct AdvanceOrderTests {
    @Test("work queued before an advance runs at the time it was queued, however slow the thread")
    func queuedWorkRunsBeforeTheClockMoves() throws {
        let test = try TestThread(name: "kit-queued-first")
        defer { test.thread.stop() }
        let clock = test.clock
        let seen = Recorder<Duration>()
        try test.thread.perform {
            // A slow item: an advance that did not wait for queued work would move the clock while
            // it ran. The sleep only makes that race certain; the assertion waits on the advance,
            // not on time.
            usleep(50_000)
            seen.record(clock.elapsed)
        }
        try test.advance(by: .seconds(10))
        #expect(seen.events == [.zero])
        #expect(clock.elapsed == .seconds(10))
    }

    @Test("queued work, then the clock, then due timers in deadline order, then the work they queued")
    func order() throws {
        let test = try TestThread(name: "kit-advance-order")
        defer { test.thread.stop() }
        let clock = test.clock
        let thread = test.thread
        let log = Recorder<String>()
        try thread.perform(after: .seconds(2)) {
            log.record("timer2@\(clock.elapsed)")
            try? thread.perform { log.record("queued-by-timer2@\(clock.elapsed)") }
        }
        try thread.perform(after: .seconds(1)) { log.record("timer1@\(clock.elapsed)") }
        try thread.perform {
            usleep(20_000)
            log.record("queued@\(clock.elapsed)")
        }
        try test.advance(by: .seconds(3))
        #expect(log.events == [
            "queued@0.0 seconds", "timer1@1.0 seconds", "timer2@2.0 seconds", "queued-by-timer2@2.0 seconds",
        ])
    }
}
