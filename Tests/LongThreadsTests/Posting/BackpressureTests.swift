import Foundation
@testable import LongThreads
import Testing

@Suite("Backpressure: Options.queueLimit")
struct BackpressureTests {
    private static func thread(_ name: String, high: Int, low: Int? = nil, whenFull: LongThread.QueueLimit.WhenFull) throws -> LongThread {
        try LongThread(
            name: name,
            options: .init(queueLimit: .init(highWatermark: high, lowWatermark: low, whenFull: whenFull))
        )
    }

    @Test("the watermarks are clamped into range")
    func clamping() {
        let limit = LongThread.QueueLimit(highWatermark: 0, lowWatermark: 5)
        #expect(limit.highWatermark == 1)
        #expect(limit.lowWatermark == 1)
        #expect(LongThread.QueueLimit(highWatermark: 100).lowWatermark == 50)
        #expect(LongThread.QueueLimit(highWatermark: 1).lowWatermark == 1)
        // Below 1 a queue would never open again (NIO's rule: below the low watermark).
        #expect(LongThread.QueueLimit(highWatermark: 10, lowWatermark: -3).lowWatermark == 1)
        #expect(LongThread.QueueLimit(highWatermark: 10, lowWatermark: 0).lowWatermark == 1)
        // Equal watermarks are allowed, as in NIO: no hysteresis.
        #expect(LongThread.QueueLimit(highWatermark: 10, lowWatermark: 10).lowWatermark == 10)
        #expect(LongThread.QueueLimit(highWatermark: 10, lowWatermark: 11).lowWatermark == 10)
    }

    @Test("as NIO's HighLowWatermark: full from the post that reaches the high watermark until the backlog is below the low one")
    func watermarkBoundaries() throws {
        var pressure = Backpressure(.init(highWatermark: 4, lowWatermark: 2))
        for _ in 0..<3 { try pressure.admit(refusable: true) }
        #expect(!pressure.isFull)
        try pressure.admit(refusable: true)
        #expect(pressure.isFull) // reached, though nothing was refused yet
        pressure.finished(1) // 3
        #expect(throws: LongThreadError.queueFull) { try pressure.admit(refusable: true) }
        pressure.finished(1) // 2: at the low watermark, still full
        #expect(pressure.isFull)
        #expect(throws: LongThreadError.queueFull) { try pressure.admit(refusable: true) }
        pressure.finished(1) // 1: below it, open
        #expect(!pressure.isFull)
        try pressure.admit(refusable: true)
        #expect(pressure.backlog == 2)
    }

    @Test("the post that reaches the high watermark makes the queue full, before any post is refused")
    func fullFromTheHighWatermark() throws {
        let thread = try Self.thread("lt-bp-high", high: 3, low: 1, whenFull: .throwError)
        defer { thread.stop() }
        let first = Latch(), second = Latch(), secondRuns = Latch()
        try thread.occupy(until: first) // backlog 1
        try thread.perform {
            secondRuns.countDown()
            second.wait()
        } // 2
        try thread.perform {} // 3: full
        first.countDown() // the refill publishes the first as finished: 2
        #expect(secondRuns.wait())
        #expect(throws: LongThreadError.queueFull) { try thread.perform {} }
        second.countDown()
        #expect(waitUntil { (try? thread.perform {}) != nil })
    }

    @Test("at exactly the low watermark the queue is still full; it opens below it")
    func opensBelowTheLowWatermark() throws {
        let thread = try Self.thread("lt-bp-low", high: 4, low: 2, whenFull: .throwError)
        defer { thread.stop() }
        let gates = (Latch(), Latch(), Latch())
        let thirdRuns = Latch(), fourthRuns = Latch()
        try thread.occupy(until: gates.0) // backlog 1
        try thread.perform {} // 2
        try thread.perform {
            thirdRuns.countDown()
            gates.1.wait()
        } // 3
        gates.0.countDown() // the refill publishes the first as finished (2) and takes the next two
        #expect(thirdRuns.wait())
        try thread.perform {
            fourthRuns.countDown()
            gates.2.wait()
        } // 3
        try thread.perform {} // 4: full
        #expect(throws: LongThreadError.queueFull) { try thread.perform {} }
        gates.1.countDown() // the refill publishes two more as finished: 2, the low watermark
        #expect(fourthRuns.wait())
        #expect(throws: LongThreadError.queueFull) { try thread.perform {} }
        gates.2.countDown() // 0
        #expect(waitUntil { (try? thread.perform {}) != nil })
    }

    @Test("at the limit, perform, submit and sync throw .queueFull; after the drain, work is accepted again")
    func throwsWhenFull() throws {
        let thread = try Self.thread("lt-bp-throw", high: 4, low: 1, whenFull: .throwError)
        defer { thread.stop() }
        let gate = Latch()
        try thread.occupy(until: gate) // 1
        let ran = Counter()
        for _ in 0..<3 { try thread.perform { ran.increment() } } // 4: full
        #expect(throws: LongThreadError.queueFull) { try thread.perform { ran.increment() } }
        #expect(throws: LongThreadError.queueFull) { try thread.submit { ran.increment() } }
        #expect(throws: LongThreadError.queueFull) { try thread.perform(waitUntilDone: true) { ran.increment() } }
        #expect(throws: LongThreadError.queueFull) { try thread.sync { ran.increment() } }
        gate.countDown()
        #expect(waitUntil { thread.statistics.tasksRun == 4 })
        // The thread published what it finished: the queue accepts again.
        #expect(waitUntil { (try? thread.perform { ran.increment() }) != nil })
        try thread.perform(waitUntilDone: true) {}
        #expect(ran.value == 4)
    }

    @Test("with .block, producers wait for room, nothing is lost, and the queue never holds more than the limit")
    func blocksWhenFull() throws {
        let high = 100
        let thread = try Self.thread("lt-bp-block", high: high, whenFull: .block)
        defer { thread.stop() }
        let ran = Counter()
        let producers = 3
        let perProducer = 2_000
        let done = Latch(count: producers)
        for _ in 0..<producers {
            Thread {
                for _ in 0..<perProducer { try! thread.perform { ran.increment() } }
                done.countDown()
            }.start()
        }
        #expect(done.wait(timeout: .seconds(60)))
        try thread.perform(waitUntilDone: true) {}
        #expect(ran.value == producers * perProducer)
        #expect(thread.statistics.highWaterMark <= high)
    }

    @Test("called on the thread itself, a post to a full queue throws .queueFull instead of waiting on itself")
    func fullOnItself() throws {
        let thread = try Self.thread("lt-bp-self", high: 2, whenFull: .block)
        defer { thread.stop() }
        let outcome = try thread.sync { () -> [Bool] in
            var accepted: [Bool] = []
            for _ in 0..<4 { accepted.append((try? thread.perform {}) != nil) }
            return accepted
        }
        // The sync item itself counts: one more fits, then the queue is full.
        #expect(outcome == [true, false, false, false])
    }

    @Test("run suspends the task while the queue is full, and completes once there is room")
    func runSuspends() async throws {
        let thread = try Self.thread("lt-bp-run", high: 2, low: 0, whenFull: .throwError)
        defer { thread.stopAtTestEnd() }
        let gate = Latch()
        try thread.occupy(until: gate)
        try thread.perform {}
        #expect(throws: LongThreadError.queueFull) { try thread.perform {} }
        let waiting = Task { try await thread.run { 42 } }
        try await Task.sleep(for: .milliseconds(20)) // give it time to wrongly finish; not a correctness wait
        gate.countDown()
        #expect(try await waiting.value == 42)
    }

    @Test("a task cancelled while waiting for room gets CancellationError, and its work never runs")
    func cancelledWhileWaiting() async throws {
        let thread = try Self.thread("lt-bp-cancel", high: 1, low: 0, whenFull: .throwError)
        defer { thread.stopAtTestEnd() }
        let gate = Latch()
        try thread.occupy(until: gate)
        let ran = Counter()
        let waiting = Task { try await thread.run { ran.increment() } }
        // Most likely waiting for room by now; cancelled earlier, it takes the other path to the
        // same outcome (no public state tells a waiting producer apart).
        try await Task.sleep(for: .milliseconds(50))
        waiting.cancel()
        await #expect(throws: CancellationError.self) { try await waiting.value }
        gate.countDown()
        try await thread.run {}
        #expect(ran.value == 0)
    }

    @Test("a stop wakes every producer waiting for room, blocked or suspended, with .stopped")
    func stopWakesProducers() async throws {
        for pending in [LongThread.PendingWork.drain, .discard] {
            let thread = try Self.thread("lt-bp-stop", high: 1, low: 0, whenFull: .block)
            let gate = Latch()
            try thread.occupy(until: gate)
            let outcomes = Recorder<String>()
            let blockedDone = Latch(count: 3)
            for _ in 0..<3 {
                Thread {
                    do {
                        try thread.perform {}
                        outcomes.record("accepted")
                    } catch {
                        outcomes.record("\(error)")
                    }
                    blockedDone.countDown()
                }.start()
            }
            for _ in 0..<3 {
                Task {
                    do {
                        try await thread.run {}
                        outcomes.record("accepted")
                    } catch {
                        outcomes.record("\(error)")
                    }
                }
            }
            try await Task.sleep(for: .milliseconds(50)) // let the producers reach the full queue
            thread.stop(waitUntilDone: false, pending: pending)
            // Bounded, and shorter than the gate's own timeout (10 s), after which the drain would
            // make room and wake the producers anyway: only the stop can wake them in time.
            #expect(await blockedDone.value(timeout: .seconds(5)))
            #expect(await eventually(timeout: .seconds(5)) { outcomes.count == 6 })
            gate.countDown()
            #expect(await thread.waitUntilExit())
            #expect(outcomes.events.count == 6)
            #expect(outcomes.events.allSatisfy { $0 == "\(LongThreadError.stopped)" })
        }
    }

    @Test("actor jobs are never refused by a full queue")
    func actorJobsNeverRefused() async throws {
        let thread = try Self.thread("lt-bp-actor", high: 1, low: 0, whenFull: .throwError)
        defer { thread.stopAtTestEnd() }
        let pinned = Pinned(thread: thread)
        let gate = Latch()
        try thread.occupy(until: gate)
        #expect(throws: LongThreadError.queueFull) { try thread.perform {} }
        let call = Task { await pinned.increment() }
        try await Task.sleep(for: .milliseconds(10))
        gate.countDown()
        let result = await call.value
        #expect(result.count == 1 && result.onThread)
    }
}
