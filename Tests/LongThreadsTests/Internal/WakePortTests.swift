@testable import LongThreads
import Foundation
import LongThreadsTestSupport
import Testing

/// A thread that has lived a millisecond wakes through an eventfd of its own, a port source, and
/// not through `CFRunLoopWakeUp` (`RunLoopEngine.installWakePort`).
@Suite("Wake-up port")
struct WakePortTests {
    @Test("a thread installs its wake-up port at its first callout once it has lived a millisecond")
    func installedAtTheFirstCalloutAfterAMillisecond() throws {
        let thread = try LongThread(name: "lt-wakeport")
        defer { thread.stop() }
        // No callout has run yet: the loop only entered its run.
        #expect(!thread.core.hasWakePort)
        // A condition on time itself, not a hope: the next callout begins over 2 ms after the start.
        Thread.sleep(forTimeInterval: 0.002)
        try thread.sync {}
        #expect(thread.core.hasWakePort)
        // Work still runs, woken through the port, in the default mode and in a custom one.
        #expect(try thread.sync { 42 } == 42)
        let custom = RunLoop.Mode("lt.wakeport.custom")
        let ran = Latch()
        try thread.perform(modes: [custom]) { ran.countDown() }
        try thread.perform { _ = RunLoop.current.run(mode: custom, before: Date(timeIntervalSinceNow: 5)) }
        #expect(ran.wait())
    }

    @Test("a task's run(mode:before:) woken through the port returns having run the posted item")
    func nestedRunReturnsHavingRunTheItem() throws {
        let thread = try LongThread(name: "lt-wakeport-nested", settleInDelay: 0)
        defer { thread.stop() }
        let tid = try thread.kernelThreadID()
        #expect(thread.core.hasWakePort)
        let ran = Counter()
        let runs = Counter()
        let inRun = Latch()
        let done = Latch()
        try thread.perform {
            inRun.countDown()
            // A handled source ends each run: the port's perform must run the work itself, or
            // this run returns having run nothing and the task goes round again.
            repeat {
                _ = RunLoop.current.run(mode: .default, before: Date(timeIntervalSinceNow: 5))
                runs.increment()
            } while ran.value == 0 && runs.value < 100
            done.countDown()
        }
        #expect(inRun.wait())
        // Posted while the nested run sleeps, so it is the port that wakes it.
        #expect(waitUntil { loopIsAsleep(tid) })
        try thread.perform { ran.increment() }
        #expect(done.wait())
        #expect(ran.value == 1)
        #expect(runs.value == 1)
    }

    @Test("work posted while threads settle in is never lost: 4 producers across the switch")
    func noWorkLostAcrossTheSwitch() throws {
        let perProducer = 20_000
        for round in 0..<5 {
            let thread = try LongThread(name: "lt-wakeport-switch-\(round)")
            let ran = Counter()
            let producers = 4
            let posted = Latch(count: producers)
            for _ in 0..<producers {
                Thread.detachNewThread {
                    for index in 0..<perProducer {
                        // Now and then a caller blocks for its reply: the loop sleeps in between.
                        if index % 1_000 == 0 {
                            try? thread.sync { ran.increment() }
                        } else {
                            try? thread.perform { ran.increment() }
                        }
                    }
                    posted.countDown()
                }
            }
            #expect(posted.wait())
            #expect(waitUntil { ran.value == producers * perProducer })
            #expect(thread.core.hasWakePort)
            thread.stop()
        }
    }

    @Test("a stop of a settled-in, sleeping thread wakes it and ends it")
    func stopOfASleepingThread() throws {
        for _ in 0..<20 {
            let thread = try LongThread(name: "lt-wakeport-stop", settleInDelay: 0)
            let tid = try thread.kernelThreadID()
            #expect(thread.core.hasWakePort)
            #expect(waitUntil { loopIsAsleep(tid) })
            // On another thread, so that a stop that never ends fails the test instead of hanging it.
            let stopped = Latch()
            Thread.detachNewThread {
                thread.stop()
                stopped.countDown()
            }
            #expect(stopped.wait())
            #expect(!thread.isRunning)
        }
    }
}
