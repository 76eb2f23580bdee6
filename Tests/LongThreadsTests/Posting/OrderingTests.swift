import CoreFoundation
import Foundation
import LongThreads
import Testing

@Suite("Work runs on the thread, in order")
struct OrderingTests {
    @Test("every item runs on the thread itself")
    func runsOnThread() async throws {
        let thread = try LongThread(name: "lt-on-thread")
        defer { thread.stopAtTestEnd() }
        let done = Latch()
        let sawIt = Recorder<Bool>()
        try thread.perform {
            sawIt.record(LongThread.current === thread && thread.isCurrent)
            done.countDown()
        }
        #expect(done.wait())
        #expect(try thread.syncBlocking { thread.isCurrent && LongThread.current === thread })
        #expect(try await thread.run { thread.isCurrent })
        #expect(sawIt.events == [true])
        #expect(!thread.isCurrent)
        #expect(LongThread.current == nil)
    }

    @Test("FIFO for each producer across perform, perform(waitUntilDone:), sync and run")
    func fifoAcrossEveryWayOfPosting() async throws {
        let thread = try LongThread(name: "lt-fifo")
        defer { thread.stopAtTestEnd() }
        let log = Recorder<(producer: Int, sequence: Int)>()
        let producers = 4
        let perProducer = 400
        try await withThrowingTaskGroup(of: Void.self) { group in
            for producer in 0..<producers {
                group.addTask {
                    for sequence in 0..<perProducer {
                        let record: @Sendable () -> Void = { log.record((producer, sequence)) }
                        switch sequence % 10 {
                        case 3: try thread.performBlocking(record)
                        case 5: try thread.syncBlocking(record)
                        case 7: try await thread.run(record)
                        default: try thread.perform(record)
                        }
                    }
                }
            }
            try await group.waitForAll()
        }
        try await thread.run {}
        let events = log.events
        #expect(events.count == producers * perProducer)
        for producer in 0..<producers {
            let sequence = events.filter { $0.producer == producer }.map(\.sequence)
            #expect(sequence == Array(0..<perProducer))
        }
    }

    @Test("a burst posted while the thread is busy runs in order after the busy item")
    func burstWhileBusy() throws {
        let thread = try LongThread(name: "lt-burst")
        defer { thread.stop() }
        let gate = Latch()
        let log = Recorder<Int>()
        try thread.perform { gate.wait() }
        for index in 0..<10_000 { try thread.perform { log.record(index) } }
        gate.countDown()
        try thread.sync {}
        #expect(log.events == Array(0..<10_000))
    }

    @Test("work posted from a task on the thread itself is queued behind earlier work")
    func reentrantPost() throws {
        let thread = try LongThread(name: "lt-reentrant")
        defer { thread.stop() }
        let log = Recorder<String>()
        let gate = Latch()
        let innerRan = Latch()
        try thread.perform { gate.wait() }
        try thread.perform {
            try? thread.perform {
                log.record("inner")
                innerRan.countDown()
            }
            log.record("outer")
        }
        try thread.perform { log.record("next") }
        gate.countDown()
        #expect(innerRan.wait())
        #expect(log.events == ["outer", "next", "inner"])
    }

    @Test(".common work runs in the default mode, in order with default-mode work")
    func commonModes() throws {
        let thread = try LongThread(name: "lt-common")
        defer { thread.stop() }
        let log = Recorder<Int>()
        for index in 0..<100 {
            try thread.perform(modes: index.isMultiple(of: 2) ? [.common] : [.default]) { log.record(index) }
        }
        try thread.sync {}
        #expect(log.events == Array(0..<100))
    }

    @Test("work for another mode waits, in order, until a run in that mode, and never runs early")
    func customModeWaits() throws {
        let thread = try LongThread(name: "lt-modes")
        defer { thread.stop() }
        let tracking = RunLoop.Mode("tracking")
        let log = Recorder<String>()
        try thread.perform(modes: [tracking]) { log.record("t1") }
        try thread.perform { log.record("d1") }
        try thread.perform(modes: [tracking]) { log.record("t2") }
        try thread.sync {}
        #expect(log.events == ["d1"])
        // A task runs the loop nested in `tracking`: only tracking work runs meanwhile.
        try thread.sync {
            try? thread.perform { log.record("d2") }
            _ = RunLoop.current.run(mode: tracking, before: Date().addingTimeInterval(0.2))
            log.record("nested run returned")
        }
        try thread.sync {}
        #expect(log.events == ["d1", "t1", "t2", "nested run returned", "d2"])
    }

    @Test("a run nested in the default mode continues the current batch in order")
    func nestedRunKeepsOrder() throws {
        let thread = try LongThread(name: "lt-nested")
        defer { thread.stop() }
        let log = Recorder<Int>()
        let gate = Latch()
        let fourRan = Latch()
        try thread.perform { gate.wait() }
        try thread.perform {
            log.record(0)
            // The nested run serves the rest of the batch (1...3) and newer work (4) in order.
            try? thread.perform {
                log.record(4)
                fourRan.countDown()
            }
            let deadline = Date().addingTimeInterval(5)
            while log.count < 5 && Date() < deadline {
                _ = RunLoop.current.run(mode: .default, before: deadline)
            }
        }
        for index in 1...3 { try thread.perform { log.record(index) } }
        gate.countDown()
        #expect(fourRan.wait())
        #expect(log.events == [0, 1, 2, 3, 4])
    }

    @Test("an empty mode list is refused with noModes")
    func noModes() throws {
        let thread = try LongThread(name: "lt-nomodes")
        defer { thread.stop() }
        #expect(throws: LongThreadError.noModes) { try thread.perform(modes: []) {} }
    }
}
