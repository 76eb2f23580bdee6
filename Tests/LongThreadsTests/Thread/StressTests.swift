import Foundation
import LongThreads
import Testing

/// Producers post while other threads stop the thread and drop the last reference. Afterwards
/// every post that did not throw ran exactly once, or its waiter was told `.discarded`.
@Suite("Stress: stop and teardown racing producers", .serialized)
struct StressTests {
    final class Ledger: @unchecked Sendable {
        private let lock = NSLock()
        private var accepted = 0
        private var refused = 0
        private var discardedWaits = 0
        private var runs: [Int: Int] = [:]
        private var acceptedAsync = Set<Int>()
        private var acceptedWaiting: [Int: Bool] = [:] // id -> ran

        func ran(_ id: Int) { lock.withLock { runs[id, default: 0] += 1 } }
        func acceptedFireAndForget(_ id: Int) { lock.withLock { accepted += 1; acceptedAsync.insert(id) } }
        func waited(_ id: Int, discarded: Bool) {
            lock.withLock {
                accepted += 1
                if discarded { discardedWaits += 1 }
                acceptedWaiting[id] = !discarded
            }
        }
        func wasRefused() { lock.withLock { refused += 1 } }

        /// Problems found: items run twice, waited items whose report disagrees with what ran.
        /// Fire-and-forget items may be discarded only by a discarding stop, so they are checked
        /// for "at most once" here and "exactly once" in the draining rounds.
        func problems(allFireAndForgetMustRun: Bool) -> [String] {
            lock.withLock {
                var problems: [String] = []
                for (id, count) in runs where count != 1 { problems.append("item \(id) ran \(count) times") }
                for (id, ran) in acceptedWaiting where ran != (runs[id] == 1) {
                    problems.append("waited item \(id): reported ran=\(ran), ran \(runs[id] ?? 0) times")
                }
                if allFireAndForgetMustRun {
                    for id in acceptedAsync where runs[id] != 1 { problems.append("accepted item \(id) never ran") }
                }
                return problems
            }
        }
    }

    @Test("posts racing stop(.drain), stop(.discard) and the last reference", .timeLimit(.minutes(2)),
          arguments: [LongThread.PendingWork.drain, .discard])
    func producersRacingStop(pending: LongThread.PendingWork) throws {
        let threadsBefore = ProcessCensus.threadNames.filter { $0 == "lt-stress" }.count
        #expect(threadsBefore == 0)
        for round in 0..<40 {
            let ledger = Ledger()
            let holder = Holder()
            holder.thread = try LongThread(name: "lt-stress")
            let thread = holder.thread!
            let producers = 3
            let started = Latch(count: producers)
            let finished = Latch(count: producers + 2)
            for producer in 0..<producers {
                Thread { [thread] in
                    started.countDown()
                    for index in 0..<300 {
                        let id = producer * 1_000_000 + round * 1000 + index
                        do {
                            if index.isMultiple(of: 7) {
                                do {
                                    try thread.sync { ledger.ran(id) }
                                    ledger.waited(id, discarded: false)
                                } catch LongThreadError.discarded {
                                    ledger.waited(id, discarded: true)
                                }
                            } else {
                                try thread.perform { ledger.ran(id) }
                                ledger.acceptedFireAndForget(id)
                            }
                        } catch {
                            ledger.wasRefused()
                        }
                    }
                    finished.countDown()
                }.start()
            }
            #expect(started.wait())
            // Two stoppers at once, one of them with the pending policy under test.
            Thread { thread.stop(pending: pending); finished.countDown() }.start()
            Thread { thread.stop(pending: .drain); finished.countDown() }.start()
            holder.thread = nil
            #expect(finished.wait(timeout: .seconds(30)), "round \(round) hung")
            let problems = ledger.problems(allFireAndForgetMustRun: pending == .drain)
            #expect(problems.isEmpty, "round \(round): \(problems.prefix(5))")
        }
        #expect(waitUntil { ProcessCensus.threadNames.filter { $0 == "lt-stress" }.isEmpty })
    }
}
