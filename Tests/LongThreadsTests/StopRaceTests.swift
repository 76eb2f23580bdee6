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
    func secondStopWaitsForTheSameEnd() throws {
        for _ in 0..<3 {
            let thread = try LongThread(name: "lt-stop-race")
            let started = Latch()
            let gate = Latch()
            try thread.perform { started.countDown(); gate.wait() }
            #expect(started.wait())
            let released = Released()
            let queued = 100_000
            for _ in 0..<queued {
                let token = Released.Token(released)
                try thread.perform { _ = token }
            }
            let waiters = 4
            let told = Counter()
            let waitersQueued = Latch(count: waiters)
            for _ in 0..<waiters {
                Thread {
                    do {
                        try thread.perform(waitUntilDone: true) { waitersQueued.countDown() }
                    } catch LongThreadError.discarded {
                        told.increment()
                    } catch {}
                }.start()
            }
            // The waiters' items are queued once the statistics count them.
            #expect(waitUntil { thread.statistics.pending >= queued + waiters })
            let firstDone = Latch()
            Thread {
                thread.stop(pending: .discard)
                firstDone.countDown()
            }.start()
            #expect(waitUntil { !thread.isRunning })
            gate.countDown()
            thread.stop() // the second stopper
            #expect(released.count.load(ordering: .relaxed) == queued)
            #expect(told.value == waiters)
            #expect(firstDone.wait())
            #expect(released.count.load(ordering: .relaxed) == queued, "after the first stop returned")
        }
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
    func stopRequestedBeforeStopped() throws {
        let instrument = SlowInstrument()
        let thread = try LongThread(name: "lt-event-order", options: .init(instrument: instrument))
        let started = Latch()
        let gate = Latch()
        try thread.perform { started.countDown(); gate.wait() }
        #expect(started.wait())
        Thread { thread.stop(waitUntilDone: false) }.start()
        #expect(instrument.inStopRequested.wait())
        gate.countDown() // the loop finishes the task and sees the stop
        #expect(thread.waitUntilExit(timeout: .seconds(10)))
        let events = instrument.log.events.filter { $0 == "stopRequested" || $0 == "stopped" }
        #expect(events == ["stopRequested", "stopped"])
    }
}
