import Foundation
import LongThreads
import Synchronization
import Testing

/// Stops that race each other, and the order their events reach an instrument.
@Suite("Concurrent stops")
struct StopRaceTests {
    /// Counts the closures released: each captures one.
    final class Released: @unchecked Sendable {
        let count = Atomic<Int>(0)
        final class Token: Sendable {
            let owner: Released
            init(_ owner: Released) { self.owner = owner }
            deinit { owner.count.add(1, ordering: .relaxed) }
        }
    }

    @Test("a second stop returns only once the first stop's discarded work is released and its waiters told")
    func secondStopWaitsForTheSameEnd() async throws {
        for _ in 0..<3 {
            // Blocking work runs off the cooperative pool; assertions stay here, in the test's task.
            let round = try await offThePool { try Self.secondStopRound() }
            #expect(round.stopStarted && round.waitersQueued && round.firstStopReturned)
            // Every closure released when the second stop returned, those queued after the
            // waiters' items too: the discarding pass had passed the waiters, and told each.
            #expect(round.releasedWhenSecondStopReturned == round.queued + round.queuedAfterWaiters)
            // Each waiter's own thread then runs when the scheduler lets it (seen: not yet, when
            // the second stop returned, on a loaded machine): awaited, bounded.
            #expect(round.allWaitersTold)
        }
    }

    struct Round: Sendable {
        var queued = 100_000
        var waiters = 4
        var waitersQueued = false
        var stopStarted = false
        var releasedWhenSecondStopReturned = 0
        var queuedAfterWaiters = 1_000
        var allWaitersTold = false
        var firstStopReturned = false
    }

    private static func secondStopRound() throws -> Round {
        var round = Round()
        let thread = try LongThread(name: "lt-stop-race")
        let started = Latch()
        let gate = Latch()
        try thread.perform { started.countDown(); gate.wait() }
        guard started.wait() else { return round }
        let released = Released()
        for _ in 0..<round.queued {
            let token = Released.Token(released)
            try thread.perform { _ = token }
        }
        let told = Counter()
        for _ in 0..<round.waiters {
            Thread {
                do {
                    try thread.perform(waitUntilDone: true) {}
                } catch LongThreadError.discarded {
                    told.increment()
                } catch {}
            }.start()
        }
        // The waiters' items are queued once the statistics count them.
        let total = round.queued + round.waiters
        round.waitersQueued = waitUntil { thread.statistics.pending >= total }
        for _ in 0..<round.queuedAfterWaiters {
            let token = Released.Token(released)
            try thread.perform { _ = token }
        }
        let firstDone = Latch()
        Thread {
            thread.stop(pending: .discard)
            firstDone.countDown()
        }.start()
        round.stopStarted = waitUntil { !thread.isRunning }
        gate.countDown()
        thread.stop() // the second stopper
        round.releasedWhenSecondStopReturned = released.count.load(ordering: .relaxed)
        round.allWaitersTold = waitUntil { told.value == round.waiters }
        round.firstStopReturned = firstDone.wait()
        return round
    }

    /// Records each event only when `record` returns; it lingers in `.stopRequested`, as a slow
    /// log handler would.
    final class SlowInstrument: LongThreadInstrument, @unchecked Sendable {
        let log = Recorder<String>()
        let inStopRequested = Latch()
        let stopped = Latch()

        func record(_ event: LongThreadEvent) {
            switch event {
            case .stopRequested:
                inStopRequested.countDown()
                stopped.wait(timeout: .milliseconds(300))
            case .stopped:
                stopped.countDown()
            default:
                break
            }
            log.record(event.name)
        }
    }

    @Test("an instrument hears stopRequested before stopped, however slow it is")
    func stopRequestedBeforeStopped() async throws {
        let events = try await offThePool { () -> [String]? in
            let instrument = SlowInstrument()
            let thread = try LongThread(name: "lt-event-order", options: .init(instrument: instrument))
            let started = Latch()
            let gate = Latch()
            try thread.perform { started.countDown(); gate.wait() }
            guard started.wait() else { return nil }
            Thread { thread.stop(waitUntilDone: false) }.start()
            guard instrument.inStopRequested.wait() else { return nil }
            gate.countDown() // the loop finishes the task and sees the stop
            guard thread.waitUntilExit(timeout: .seconds(10)) else { return nil }
            return instrument.log.events.filter { $0 == "stopRequested" || $0 == "stopped" }
        }
        #expect(events == ["stopRequested", "stopped"])
    }
}
