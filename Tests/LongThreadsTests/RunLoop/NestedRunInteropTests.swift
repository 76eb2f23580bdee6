import Foundation
import LongThreads
import Testing

/// Foundation's run-loop idioms inside a task behave as on a Foundation thread.
@Suite("Foundation nested runs inside a task")
struct NestedRunInteropTests {
    @Test("RunLoop.run(mode:before:) inside a task sleeps until its timer fires, as on a Foundation thread")
    func runBeforeWaits() throws {
        let thread = try LongThread(name: "lt-fdn-nested")
        defer { thread.stop() }
        let (fired, elapsed) = try thread.sync { () -> (Bool, Duration) in
            nonisolated(unsafe) var fired = false
            let timer = Timer(timeInterval: 0.010, repeats: false) { _ in fired = true }
            RunLoop.current.add(timer, forMode: .default)
            let clock = ContinuousClock()
            let start = clock.now
            _ = RunLoop.current.run(mode: .default, before: Date().addingTimeInterval(0.050))
            return (fired, clock.now - start)
        }
        #expect(fired)
        #expect(elapsed >= .milliseconds(9))
    }

    @Test("a RunLoop.run(mode:before:) wait loop inside a task sleeps between passes instead of spinning")
    func waitLoopDoesNotSpin() throws {
        let thread = try LongThread(name: "lt-fdn-spin")
        defer { thread.stop() }
        let passes = try thread.sync { () -> Int in
            // The common idiom: run the loop in short slices until a condition or a deadline. On
            // a Foundation thread each slice sleeps its 50 ms: 4 passes in 200 ms.
            var passes = 0
            let end = Date().addingTimeInterval(0.200)
            while Date() < end {
                _ = RunLoop.current.run(mode: .default, before: min(end, Date().addingTimeInterval(0.050)))
                passes += 1
            }
            return passes
        }
        #expect(passes <= 10) // thousands if each slice returned at once instead of sleeping
    }

    @Test("work posted during a Foundation nested run in its mode still runs in it")
    func nestedRunServesWork() throws {
        let thread = try LongThread(name: "lt-fdn-serve")
        defer { thread.stop() }
        let ran = try thread.sync { () -> Bool in
            let flag = Latch()
            Thread { try? thread.perform { flag.countDown() } }.start()
            let limit = Date().addingTimeInterval(10)
            while !flag.isOpen, Date() < limit { _ = RunLoop.current.run(mode: .default, before: limit) }
            return flag.isOpen
        }
        #expect(ran)
    }

    /// Foundation on Linux reads `Thread.name` back from the kernel, which keeps 15 bytes (a
    /// Foundation `Thread` named this way even reads back the process name: its setter fails with
    /// ERANGE). So the whole name is `LongThread.current?.name`, and Foundation sees the cut one.
    @Test("a long name: LongThread.current?.name is whole, Thread.current.name the kernel's 15 bytes")
    func longName() throws {
        let thread = try LongThread(name: "database-connection-7")
        defer { thread.stop() }
        let (whole, foundation) = try thread.sync { (LongThread.current?.name, Thread.current.name) }
        #expect(whole == "database-connection-7")
        #expect(foundation == "database-connec")
    }
}
