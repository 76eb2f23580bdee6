import Foundation
import LongThreads
import Testing

@Suite("Foundation interop and statistics")
struct InteropTests {
    @Test("inside a task RunLoop.current is the thread's loop, Thread.current has its name")
    func foundationViews() throws {
        let thread = try LongThread(name: "lt-interop")
        defer { thread.stop() }
        let (mode, name, sameLoop) = try thread.sync { () -> (RunLoop.Mode?, String?, Bool) in
            (RunLoop.current.currentMode, Thread.current.name, RunLoop.current === RunLoop.current)
        }
        #expect(mode == .default)
        #expect(name == "lt-interop")
        #expect(sameLoop)
    }

    @Test("Foundation's Timer scheduled inside a task fires on the thread")
    func foundationTimer() throws {
        let thread = try LongThread(name: "lt-fdn-timer")
        defer { thread.stop() }
        let fired = Latch(count: 3)
        let onThread = Recorder<Bool>()
        try thread.perform {
            // Foundation's Timer never frees its closure on Linux (a Foundation bug the library
            // avoids by using CF timers); the test suppresses that one leak for LeakSanitizer.
            _ = Timer.scheduledTimer(withTimeInterval: 0.01, repeats: true) { timer in
                onThread.record(thread.isCurrent)
                fired.countDown()
                if onThread.count == 3 { timer.invalidate() }
            }
        }
        #expect(fired.wait())
        #expect(onThread.events == [true, true, true])
    }

    @Test("RunLoop.current.perform inside a task runs right after that task, on the thread")
    func runLoopPerform() throws {
        let thread = try LongThread(name: "lt-rl-perform")
        defer { thread.stop() }
        let log = Recorder<String>()
        let done = Latch()
        try thread.perform {
            RunLoop.current.perform {
                log.record("block")
                done.countDown()
            }
            log.record("task")
        }
        #expect(done.wait())
        #expect(log.events == ["task", "block"])
    }

    @Test("statistics count tasks, wake-ups, timers and busy time")
    func statistics() throws {
        let thread = try LongThread(name: "lt-stats")
        defer { thread.stop() }
        let gate = Latch()
        let started = Latch()
        try thread.perform { started.countDown(); gate.wait() }
        #expect(started.wait()) // the gate task runs: the next 100 items wait in the queue
        for _ in 0..<100 { try thread.perform { usleep(10) } }
        #expect(waitUntil { thread.statistics.pending == 100 })
        #expect(thread.statistics.highWaterMark >= 100)
        gate.countDown()
        try thread.sync {}
        // A timer that fires while the loop sleeps is one wake-up.
        let tid = try thread.kernelThreadID()
        #expect(waitUntil { loopIsAsleep(tid) })
        let wakeUpsBefore = thread.statistics.wakeUps
        let fired = Latch()
        try thread.perform(after: .milliseconds(5)) { fired.countDown() }
        #expect(fired.wait())
        try thread.sync {}
        let stats = thread.statistics
        #expect(stats.tasksRun >= 103)
        #expect(stats.pending == 0)
        #expect(stats.timersFired == 1)
        #expect(stats.wakeUps > wakeUpsBefore)
        #expect(stats.busyTime > .microseconds(100 * 10))
    }

    @Test("an instrument hears start, batches, wake-ups, the stop request and the stop")
    func instrumentEvents() throws {
        let events = EventRecorder()
        let thread = try LongThread(name: "lt-instrument", options: .init(instrument: events))
        let tid = try thread.kernelThreadID()
        #expect(waitUntil { loopIsAsleep(tid) }) // so the posts below wake it
        for _ in 0..<10 { try thread.perform {} }
        try thread.sync {}
        thread.stop()
        let names = events.names
        #expect(names.first == "started")
        #expect(names.contains("batch"))
        #expect(names.contains("wokeUp"))
        #expect(names.suffix(2) == ["stopRequested", "stopped"] || names.last == "stopped")
        if case .stopped(let name, let tasksRun, let discarded) = events.events.last {
            #expect(name == "lt-instrument")
            #expect(tasksRun == 12)
            #expect(discarded == 0)
        } else {
            Issue.record("the last event is not .stopped: \(names)")
        }
    }
}
