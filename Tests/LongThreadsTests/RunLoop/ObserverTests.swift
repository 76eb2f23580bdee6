import CoreFoundation
import Foundation
@testable import LongThreads
import Testing

@Suite("Run-loop observers")
struct ObserverTests {
    @Test("a sleeping loop woken by work goes through the documented sequence of one pass")
    func sequenceOfOnePass() throws {
        // A thread that never settles in wakes through CF (`RunLoopEngine.wake`).
        let pass = try passWokenByWork(settleInDelay: .max)
        #expect(!pass.settled)
        // Woken by the work source (signal + wake-up): the source runs in the pass after waking;
        // a pass that handled a source polls again instead of sleeping at once.
        #expect(pass.events.starts(with: ["afterWaiting", "beforeTimers", "beforeSources", "WORK", "beforeTimers", "beforeSources"]))
        #expect(pass.events.last == "beforeWaiting")
    }

    @Test("a settled-in loop woken by work runs it as the port source that woke it, then sleeps")
    func sequenceOfOnePassThroughTheWakePort() throws {
        // Settles in at its first callout (the kernel thread id's `sync`), so work posted later
        // wakes it through its own port.
        let pass = try passWokenByWork(settleInDelay: 0)
        #expect(pass.settled)
        // CF runs the version-1 source that woke the loop at once after waking; the next pass
        // finds nothing to do and sleeps: no polling pass in between.
        #expect(pass.events == ["afterWaiting", "WORK", "beforeTimers", "beforeSources", "beforeWaiting"])
    }

    /// The activities from the wake-up by one posted item until the loop sleeps again, and
    /// whether the thread had its own wake-up port then.
    private func passWokenByWork(settleInDelay: UInt64) throws -> (events: [String], settled: Bool) {
        let thread = try LongThread(name: "lt-observe", settleInDelay: settleInDelay)
        defer { thread.stop() }
        let log = Recorder<String>()
        let observer = try thread.addObserver(for: .all) { activity in log.record("\(activity)") }
        defer { observer.cancel() }
        // Let the loop go to sleep after the registration, then wake it with one item.
        let tid = try thread.kernelThreadID()
        #expect(waitUntil { log.events.last == "beforeWaiting" && loopIsAsleep(tid) })
        let settled = thread.core.hasWakePort
        let marker = log.count
        let done = Latch()
        try thread.perform { log.record("WORK"); done.countDown() }
        #expect(done.wait())
        #expect(waitUntil { log.events.last == "beforeWaiting" })
        return (Array(log.events[marker...]), settled)
    }

    @Test("a dropped observer handle keeps observing until the thread stops, as timers and descriptor sources do")
    func droppedHandleKeepsObserving() throws {
        let thread = try LongThread(name: "lt-observe-dropped")
        let passes = Counter()
        _ = try thread.addObserver(for: .beforeSources) { _ in passes.increment() }
        for _ in 0..<3 {
            let before = passes.value
            try thread.perform {}
            #expect(waitUntil { passes.value > before })
        }
        thread.stop()
    }

    @Test("observers of one activity run in ascending order; cancel stops and releases one")
    func orderAndCancel() throws {
        let thread = try LongThread(name: "lt-observe-order")
        defer { thread.stop() }
        let log = Recorder<Int>()
        weak var weakTracked: Tracked?
        let late: RunLoopObserver
        do {
            let tracked = Tracked(5)
            weakTracked = tracked
            late = try thread.addObserver(for: .beforeSources, order: 5) { _ in log.record(tracked.id) }
        }
        let early = try thread.addObserver(for: .beforeSources, order: -5) { _ in log.record(-5) }
        let middle = try thread.addObserver(for: .beforeSources, order: 0) { _ in log.record(0) }
        defer { early.cancel(); middle.cancel() }
        try thread.sync {}
        try thread.sync {}
        let events = log.events
        #expect(events.count >= 3)
        for start in stride(from: 0, to: events.count - 2, by: 3) {
            #expect(Array(events[start..<start + 3]) == [-5, 0, 5])
        }
        late.cancel()
        #expect(weakTracked == nil)
        let before = log.events.filter { $0 == 5 }.count
        try thread.sync {}
        #expect(log.events.filter { $0 == 5 }.count == before)
    }
}
