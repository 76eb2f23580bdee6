import Foundation
import LongThreads
import Testing

/// A thread reports its wake-ups (a CF after-waiting observer, a callout on every wake-up) only to
/// whom needs them: an owner to check, an instrument, a reader of `statistics`. These tests check
/// that the observer's absence elsewhere is not visible.
@Suite("Wake-up observer: installed only when used")
struct WakeUpObserverTests {
    @Test("a thread whose owner went is ended by a timer's wake-up, with no work posted")
    func ownerCheckedOnTimerWakeUp() throws {
        var owner: Tracked? = Tracked()
        let thread = try LongThread(name: "lt-owner-timer", owner: owner)
        try thread.perform(after: .milliseconds(100)) {}
        let tid = try thread.kernelThreadID()
        #expect(waitUntil { loopIsAsleep(tid) }) // the pass that added the timer has ended
        owner = nil
        // Only the timer wakes the loop now: its wake-up must check the owner.
        #expect(thread.waitUntilExit(timeout: .seconds(10)))
        #expect(!thread.isRunning)
    }

    @Test("wake-ups are counted from the first read of statistics, on a thread without owner or instrument")
    func wakeUpsCountedOnceAsked() throws {
        let thread = try LongThread(name: "lt-wake-count")
        defer { thread.stop() }
        let tid = try thread.kernelThreadID()
        #expect(thread.statistics.wakeUps == 0) // asks: the loop begins counting at its next drain
        try thread.sync {} // that drain
        for round in 1...3 {
            #expect(waitUntil { loopIsAsleep(tid) })
            let before = thread.statistics.wakeUps
            let fired = Latch()
            try thread.perform(after: .milliseconds(5)) { fired.countDown() }
            #expect(fired.wait())
            try thread.sync {} // publishes the counters
            #expect(thread.statistics.wakeUps > before, "round \(round)")
        }
    }

    @Test("counting that begins later covers a custom mode registered before it, in a nested run")
    func wakeUpsCountedInEarlierModes() throws {
        let custom = RunLoop.Mode("lt.wake.custom")
        let thread = try LongThread(name: "lt-wake-mode")
        defer { thread.stop() }
        try thread.perform(modes: [custom]) {} // registers the mode before counting begins
        _ = thread.statistics
        try thread.sync {} // counting begins
        let tid = try thread.kernelThreadID()
        let inNestedRun = Latch()
        let fired = Latch()
        let before = Recorder<Int>()
        try thread.perform {
            inNestedRun.countDown()
            _ = try? thread.runNested(in: custom, until: .now + .seconds(10)) { !fired.isOpen }
        }
        #expect(inNestedRun.wait())
        #expect(waitUntil { loopIsAsleep(tid) }) // asleep in the nested run, in `custom`
        before.record(thread.statistics.wakeUps)
        try thread.perform(after: .milliseconds(5), modes: [custom]) { fired.countDown() }
        #expect(fired.wait())
        try thread.sync {}
        let first = try #require(before.events.first)
        #expect(thread.statistics.wakeUps > first)
    }
}

extension StallMonitoring {
    @Suite("Stall monitor on a thread without a wake-up observer", .serialized)
    struct LateMonitorTests {
        @Test("a stall monitor that starts watching a running thread reports a stall inside a nested run")
        func monitorAttachedLateSeesNestedRun() throws {
            let thread = try LongThread(name: "lt-late-monitor")
            defer { thread.stop() }
            try thread.sync {}
            let inNestedRun = Latch()
            let done = Latch()
            try thread.perform {
                inNestedRun.countDown()
                _ = try? thread.runNested(in: .default, until: .now + .seconds(10)) { !done.isOpen }
            }
            #expect(inNestedRun.wait())
            let reported = Latch()
            let labels = Recorder<String?>()
            let monitor = try StallMonitor(threshold: .milliseconds(50)) { report in
                labels.record(report.label)
                reported.countDown()
            }
            monitor.watch(thread)
            // Runs in the nested run: a callout of its own, which the monitor must time.
            try thread.perform(label: "nested stall") {
                _ = reported.wait(timeout: .seconds(10))
                done.countDown()
            }
            #expect(reported.wait())
            #expect(done.wait())
            monitor.unwatch(thread)
            #expect(labels.events.contains("nested stall"))
        }
    }
}
