import Foundation
import LongThreads
import Testing

/// Every suite that runs a stall monitor, one test at a time: monitors capture stacks one at a
/// time in the process, and the census finds the monitor's thread by name.
@Suite("Stall monitoring", .serialized)
enum StallMonitoring {}

extension StallMonitoring {
    @Suite("Stall monitor", .serialized) // one monitor thread at a time: the census finds it by name
    struct StallMonitorTests {
        @Test("a task running past the threshold is reported while it runs, with the thread and label")
        func stallCaught() throws {
            let reports = Recorder<StallMonitor.Report>()
            let reported = Latch()
            let monitor = try StallMonitor(threshold: .milliseconds(200)) { report in
                reports.record(report)
                reported.countDown()
            }
            let thread = try LongThread(name: "lt-stalled")
            defer { thread.stop() }
            monitor.watch(thread)
            let stillRunning = Recorder<Bool>()
            try thread.perform(label: "parse feed") {
                // The task runs until the monitor has reported it: the report must come while it runs.
                stillRunning.record(reported.wait(timeout: .seconds(10)))
            }
            try thread.sync {}
            #expect(stillRunning.events == [true])
            let report = try #require(reports.events.first)
            #expect(reports.count == 1)
            #expect(report.threadName == "lt-stalled")
            #expect(report.label == "parse feed")
            #expect(report.duration >= .milliseconds(200))
            #expect(report.duration < .milliseconds(400)) // within twice the threshold
            #expect(report.description.contains("parse feed"))
        }

        @Test("a callout already running when watch() is called is caught")
        func calloutUnderWay() throws {
            let thread = try LongThread(name: "lt-underway")
            defer { thread.stop() }
            let started = Latch()
            let reported = Latch()
            let stillRunning = Recorder<Bool>()
            try thread.perform(label: "early") {
                started.countDown()
                stillRunning.record(reported.wait(timeout: .seconds(10)))
            }
            #expect(started.wait())
            let monitor = try StallMonitor(threshold: .milliseconds(50)) { _ in reported.countDown() }
            monitor.watch(thread)
            try thread.sync {}
            #expect(stillRunning.events == [true])
        }

        @Test("work picked up by a drain already under way is caught, round after round")
        func repeatedWatchAndWork() throws {
            let thread = try LongThread(name: "lt-rounds")
            defer { thread.stop() }
            for round in 0..<20 {
                let reported = Latch()
                let monitor = try StallMonitor(threshold: .milliseconds(20)) { _ in reported.countDown() }
                // Keep a drain running, so the stalled item may join it instead of starting a pass.
                for _ in 0..<50 { try thread.perform {} }
                monitor.watch(thread)
                let stillRunning = Recorder<Bool>()
                try thread.perform(label: "round \(round)") { stillRunning.record(reported.wait(timeout: .seconds(5))) }
                try thread.sync {}
                #expect(stillRunning.events == [true], "round \(round)")
                monitor.unwatch(thread)
            }
        }

        @Test("idle and briefly busy threads are not reported, and the idle monitor sleeps")
        func noFalseAlarm() throws {
            let reports = Recorder<StallMonitor.Report>()
            let monitor = try StallMonitor(threshold: .milliseconds(100)) { reports.record($0) }
            let thread = try LongThread(name: "lt-calm")
            defer { thread.stop() }
            monitor.watch(thread)
            for _ in 0..<20 { try thread.sync { _ = usleep(1000) } }
            let watched = try thread.kernelThreadID()
            let monitorThread = try #require(ProcessCensus.threadIDs.first { ProcessCensus.name(ofThread: $0) == StallMonitor.threadName })
            // The watched loop's last pass (after the sync above) rings the monitor once; wait until
            // both sleep before measuring.
            #expect(waitUntil { loopIsAsleep(watched) })
            // The monitor then wakes once more, at most one threshold later (it slept until the last
            // callout's due time), finds everyone idle and sleeps with no timeout.
            usleep(250_000)
            #expect(waitUntil { threadIsSleeping(monitorThread) })
            let before = try #require(ProcessCensus.voluntarySwitches(ofThread: monitorThread))
            usleep(300_000) // measures an absence: no reports, no wake-ups of the monitor
            let after = try #require(ProcessCensus.voluntarySwitches(ofThread: monitorThread))
            #expect(reports.count == 0)
            #expect(after == before)
        }

        @Test("the stalled thread's instrument hears the stall too")
        func instrumentHearsStall() throws {
            let events = EventRecorder()
            let reported = Latch()
            let monitor = try StallMonitor(threshold: .milliseconds(50)) { _ in reported.countDown() }
            let thread = try LongThread(name: "lt-stall-instr", options: .init(instrument: events))
            defer { thread.stop() }
            monitor.watch(thread)
            _ = try thread.sync { reported.wait(timeout: .seconds(10)) }
            #expect(events.names.contains("stall"))
        }
    }
}

extension StallMonitoring {
    @Suite("Stall monitor blames one callout", .serialized)
    struct StallBlameTests {
        @Test("many short labelled tasks in one drain are not a stall")
        func shortTasksInOneDrain() throws {
            let reports = Recorder<StallMonitor.Report>()
            let monitor = try StallMonitor(threshold: .milliseconds(100)) { reports.record($0) }
            let thread = try LongThread(name: "lt-short")
            defer { thread.stop() }
            monitor.watch(thread)
            let gate = Latch()
            try thread.hold(until: gate)
            // Queued behind the gate, the 30 items are taken into one batch and run back to back.
            for index in 0..<30 { try thread.perform(label: "item-\(index)") { usleep(10_000) } }
            gate.countDown()
            try thread.sync {}
            #expect(reports.events.map(\.description) == [])
        }

        @Test("every slow item of one drain is reported, not only the first")
        func everySlowItemOfADrain() throws {
            let reports = Recorder<StallMonitor.Report>()
            let reportedByLabel = (0..<3).map { _ in Latch() }
            let monitor = try StallMonitor(threshold: .milliseconds(50), capturesStacks: false) { report in
                reports.record(report)
                if let label = report.label, let index = Int(label.dropFirst("slow-".count)) { reportedByLabel[index].countDown() }
            }
            let thread = try LongThread(name: "lt-every-slow")
            defer { thread.stop() }
            monitor.watch(thread)
            let gate = Latch()
            try thread.hold(until: gate)
            // Queued behind the gate, the three run back to back in one drain; each runs until its
            // own report came (or 3 s passed), so a missed report shows as a timeout, not a guess.
            let inTime = Recorder<Int>()
            for index in 0..<3 {
                try thread.perform(label: "slow-\(index)") {
                    if reportedByLabel[index].wait(timeout: .seconds(3)) { inTime.record(index) }
                }
            }
            gate.countDown()
            try thread.sync {}
            #expect(inTime.events == [0, 1, 2], "\(reports.events.map(\.description))")
            #expect(reports.events.compactMap(\.label).filter { $0.hasPrefix("slow-") } == ["slow-0", "slow-1", "slow-2"])
        }

        @Test("the slow task among fast ones is the one named")
        func culpritNamed() throws {
            let (monitor, reports, reported) = try recordingMonitor(threshold: .milliseconds(100))
            let thread = try LongThread(name: "lt-culprit")
            defer { thread.stop() }
            monitor.watch(thread)
            let gate = Latch()
            try thread.perform { gate.wait() }
            for index in 0..<20 { try thread.perform(label: "fast-\(index)") { usleep(5_000) } }
            try thread.perform(label: "culprit") { _ = reported.wait(timeout: .seconds(10)) }
            gate.countDown()
            try thread.sync {}
            let report = try #require(reports.events.first)
            #expect(reports.count == 1)
            #expect(report.label == "culprit")
            #expect(report.duration < .milliseconds(200))
        }

        @Test("a task keeps its label after a nested run, and its time restarts there")
        func labelAfterNestedRun() throws {
            let (monitor, reports, reported) = try recordingMonitor(threshold: .milliseconds(100))
            let thread = try LongThread(name: "lt-nested-label")
            defer { thread.stop() }
            monitor.watch(thread)
            let done = Latch()
            try thread.perform(label: "outer") {
                let inner = Latch()
                try? thread.perform(label: "inner") { inner.countDown() }
                _ = try? thread.runNested(in: .default, until: .now + .seconds(5)) { !inner.isOpen }
                _ = reported.wait(timeout: .seconds(10))
                done.countDown()
            }
            #expect(done.wait())
            #expect(reports.events.map(\.label) == ["outer"])
        }

        @Test("a task sleeping in a nested run is not a stall: the loop turns")
        func nestedSleepIsNotAStall() throws {
            let reports = Recorder<StallMonitor.Report>()
            let monitor = try StallMonitor(threshold: .milliseconds(50)) { reports.record($0) }
            let thread = try LongThread(name: "lt-nested-idle")
            defer { thread.stop() }
            monitor.watch(thread)
            try thread.sync(label: "waits nested") {
                // The loop turns (and sleeps) for 200 ms inside the task: the thread is responsive.
                _ = try thread.runNested(in: .default, until: .now + .milliseconds(200)) { true }
            }
            #expect(reports.events.map(\.description) == [])
        }
    }
}

/// A monitor that records its reports and opens `reported` at the first.
func recordingMonitor(threshold: Duration) throws -> (StallMonitor, Recorder<StallMonitor.Report>, Latch) {
    let reports = Recorder<StallMonitor.Report>()
    let reported = Latch()
    let monitor = try StallMonitor(threshold: threshold) { report in
        reports.record(report)
        reported.countDown()
    }
    return (monitor, reports, reported)
}

extension StallMonitoring {
    @Suite("Stall monitor reports slow delivery", .serialized)
    struct SlowDeliveryTests {
        @Test("an item that waited past the delivery threshold is reported once, with its label and the depth")
        func slowDelivery() throws {
            let reports = Recorder<StallMonitor.Report>()
            let monitor = try StallMonitor(threshold: .seconds(10), deliveryThreshold: .milliseconds(50)) { reports.record($0) }
            let thread = try LongThread(name: "lt-late")
            defer { thread.stop() }
            monitor.watch(thread)
            let gate = Latch()
            try thread.hold(until: gate)
            try thread.perform(label: "late-1") {}
            for index in 2...10 { try thread.perform(label: "late-\(index)") {} }
            usleep(80_000) // the items wait behind the gate longer than the delivery threshold
            gate.countDown()
            try thread.sync {}
            #expect(waitUntil { reports.count >= 1 })
            try thread.sync {} // a later on-time item ends the backlog
            let report = try #require(reports.events.first)
            #expect(reports.count == 1) // once per backlog, not once per late item
            #expect(report.kind == .slowDelivery)
            #expect(report.label == "late-1")
            #expect(report.duration >= .milliseconds(80))
            // late-2...late-10 wait behind it (and the sync item, if it was posted in time).
            #expect((9...10).contains(report.queueDepth))
            #expect(report.description.contains("delivered late"))
        }

        @Test("items on time, and a thread with no delivery threshold, are not reported")
        func onTime() throws {
            let reports = Recorder<StallMonitor.Report>()
            let monitor = try StallMonitor(threshold: .seconds(10)) { reports.record($0) }
            let thread = try LongThread(name: "lt-ontime")
            defer { thread.stop() }
            monitor.watch(thread)
            let gate = Latch()
            try thread.hold(until: gate)
            try thread.perform {}
            usleep(50_000)
            gate.countDown()
            for _ in 0..<100 { try thread.sync {} }
            #expect(reports.count == 0)
        }
    }
}
