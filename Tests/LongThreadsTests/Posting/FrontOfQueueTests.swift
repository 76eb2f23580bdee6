import Foundation
import LongThreads
import Testing

@Suite("Jumping the queue: performAtFrontOfQueue")
struct FrontOfQueueTests {
    @Test("urgent items run before the waiting ones, the latest first")
    func jumpsWaitingItems() throws {
        let thread = try LongThread(name: "lt-front")
        defer { thread.stop() }
        let gate = Latch()
        try thread.occupy(until: gate)
        let log = Recorder<String>()
        for name in ["a", "b", "c"] { try thread.perform { log.record(name) } }
        try thread.performAtFrontOfQueue { log.record("u1") }
        try thread.performAtFrontOfQueue { log.record("u2") }
        gate.countDown()
        try thread.perform(waitUntilDone: true) {}
        #expect(log.events == ["u2", "u1", "a", "b", "c"])
    }

    @Test("each urgent item goes to the very head: posted 3, 2, 1, 0 behind a blocker, they run 0, 1, 2, 3")
    func eachGoesToTheHead() throws {
        let thread = try LongThread(name: "lt-front-head")
        defer { thread.stop() }
        let gate = Latch()
        try thread.occupy(until: gate)
        let log = Recorder<Int>()
        try thread.perform { log.record(4) }
        for value in [3, 2, 1, 0] { try thread.performAtFrontOfQueue { log.record(value) } }
        gate.countDown()
        try thread.perform(waitUntilDone: true) {}
        #expect(log.events == [0, 1, 2, 3, 4])
    }

    @Test("Android's MessageQueueTest.testAtFrontOfQueue: a front post made by an urgent item overtakes the earlier ones")
    func androidAtFrontOfQueue() throws {
        let thread = try LongThread(name: "lt-front-android")
        defer { thread.stop() }
        let log = Recorder<Int>()
        let done = Latch()
        // Posted from a task on the thread, as Android's test posts from its looper: nothing runs
        // until all are posted.
        try thread.perform(waitUntilDone: true) {
            try! thread.perform(at: .now + .milliseconds(200)) {
                log.record(3)
                done.countDown()
            }
            try! thread.performAtFrontOfQueue { log.record(2) }
            try! thread.performAtFrontOfQueue {
                log.record(0)
                try! thread.performAtFrontOfQueue { log.record(1) }
            }
        }
        #expect(done.wait())
        #expect(log.events == [0, 1, 2, 3])
    }

    @Test("an urgent item overtakes items the thread already took into its batch")
    func jumpsTheBatch() throws {
        let thread = try LongThread(name: "lt-front-batch")
        defer { thread.stop() }
        let gate = Latch()
        let started = Latch()
        let log = Recorder<String>()
        // Posted from the thread itself, so the next refill takes the blocker and a, b, c in one batch.
        try thread.perform(waitUntilDone: true) {
            try! thread.perform {
                started.countDown()
                gate.wait()
            }
            for name in ["a", "b", "c"] { try! thread.perform { log.record(name) } }
        }
        #expect(started.wait())
        #expect(thread.statistics.pending == 0 || thread.statistics.pending == 3)
        try thread.performAtFrontOfQueue { log.record("urgent") }
        gate.countDown()
        try thread.perform(waitUntilDone: true) {}
        #expect(log.events == ["urgent", "a", "b", "c"])
    }

    @Test("an urgent item runs in a mode other than its poster's: it does not wait for a mode")
    func anyMode() throws {
        let thread = try LongThread(name: "lt-front-mode")
        defer { thread.stop() }
        let tracking = RunLoop.Mode("lt.front.tracking")
        let ran = Latch()
        let depth = Recorder<Bool>()
        try thread.perform(waitUntilDone: true) {
            try! thread.performAtFrontOfQueue { ran.countDown() }
            depth.record(try! thread.runNested(in: tracking, until: .now + .seconds(10)) { !ran.isOpen })
        }
        #expect(depth.events == [true])
    }

    @Test("after a stop, performAtFrontOfQueue throws .stopped; a discarding stop drops queued urgent items")
    func afterStop() throws {
        let thread = try LongThread(name: "lt-front-stop")
        let gate = Latch()
        try thread.occupy(until: gate)
        let ran = Counter()
        try thread.performAtFrontOfQueue { ran.increment() }
        thread.stop(waitUntilDone: false, pending: .discard)
        #expect(throws: LongThreadError.stopped) { try thread.performAtFrontOfQueue {} }
        gate.countDown()
        #expect(thread.waitUntilExit(timeout: .seconds(10)))
        #expect(ran.value == 0)
    }
}
