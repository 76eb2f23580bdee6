import Foundation
import LongThreads
import Testing

/// Process-wide counts are taken in a child process (an exit test), where no other test runs.
@Suite("Nothing leaks")
struct LeakTests {
    @Test("1,000 start/stop cycles leave the same threads and file descriptors")
    func startStopCycles() async throws {
        let result = try #require(await #expect(processExitsWith: .success, observing: [\.standardOutputContent]) {
            func census() -> (ours: Int, fds: Int, names: [String]) {
                let names = ProcessCensus.threadNames
                return (names.filter { $0.hasPrefix("lt-") }.count, ProcessCensus.descriptorCount, names)
            }
            // Warm up: Foundation and CF create their process-wide state once.
            for _ in 0..<5 { await (try! LongThread(name: "lt-warm")).stop() }
            _ = waitUntil(timeout: .seconds(2)) { census().ours == 0 }
            let before = census()
            for cycle in 0..<1000 {
                let thread = try! LongThread(name: "lt-cycle")
                try! thread.perform { _ = cycle }
                if cycle.isMultiple(of: 3) { _ = try! thread.syncBlocking { cycle } }
                await thread.stop(pending: cycle.isMultiple(of: 2) ? .drain : .discard)
            }
            // A joined thread's kernel task leaves /proc a moment after the join returns (the
            // kernel wakes the joiner before it reaps the task): wait for that, bounded.
            _ = waitUntil(timeout: .seconds(2)) { census().ours == 0 }
            let after = census()
            print("census \(before.ours) \(before.fds) \(after.ours) \(after.fds)")
            print("threads before: \(before.names), after: \(after.names)")
        })
        // Printed by the child, compared here so a failure shows both counts. Our threads are
        // counted by name: libdispatch's workers come and go on their own timers (seen: 5 threads
        // in all before, 6 after, on a busy CI machine), so the process's total says nothing.
        let report = String(decoding: result.standardOutputContent, as: UTF8.self)
        let line = try #require(report.split(separator: "\n").last { $0.hasPrefix("census ") })
        let counts = line.split(separator: " ").dropFirst().compactMap { Int($0) }
        try #require(counts.count == 4)
        #expect(counts[0] == 0 && counts[2] == 0, "LongThreads alive before and after: \(report)")
        #expect(counts[3] == counts[1], "descriptors before and after: \(report)")
    }

    @Test("closures captured by pending work are released after stop, draining or discarding")
    func pendingClosuresReleased() throws {
        for pending in [LongThread.PendingWork.drain, .discard] {
            let thread = try LongThread(name: "lt-release")
            let gate = Latch()
            try thread.perform { gate.wait() }
            weak var weakTracked: Tracked?
            do {
                let tracked = Tracked()
                weakTracked = tracked
                try thread.perform { _ = tracked.id }
                try thread.perform(modes: [RunLoop.Mode("never-run")]) { _ = tracked.id }
            }
            #expect(weakTracked != nil)
            thread.stop(waitUntilDone: false, pending: pending)
            gate.countDown()
            thread.stop()
            #expect(weakTracked == nil, "pending: \(pending)")
        }
    }

    @Test("the thread's run loop is released when stop returns")
    func runLoopReleased() throws {
        let thread = try LongThread(name: "lt-loop-release")
        weak let weakLoop: RunLoop? = try thread.sync { RunLoop.current }
        #expect(weakLoop != nil)
        thread.stop()
        #expect(weakLoop == nil)
    }
}
