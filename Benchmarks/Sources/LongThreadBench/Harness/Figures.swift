import CBenchSupport
import Glibc
import Synchronization

/// Every figure of the main table, in table order.
enum Figures {
    static func all(_ settings: Settings) -> [Figure] {
        var figures = settings.producerCounts.map { asyncThroughput(producers: $0, captured: false) }
        figures += [1, 4].map { asyncThroughput(producers: $0, captured: true) }
        figures += [roundTrip(pinned: false), callerCPU, roundTrip(pinned: true), lifecycle]
        for size in settings.stopQueueSizes {
            figures += [stopLatency(.drain, queued: size), stopLatency(.discard, queued: size)]
        }
        figures += [idle, memory, allocations, overload]
        return figures
    }

    // MARK: Throughput

    /// N closures posted by `producers` threads (N/producers each), timed from the moment all
    /// producers are released until a round trip queued after the last post returns: every
    /// contender's queue is FIFO, so that is when the last closure has run. `captured`: each closure
    /// captures an object and three words (a context the post allocates, as real work does);
    /// otherwise it is the shared no-op, which allocates nothing. Also the producers' CPU time per
    /// post (their thread CPU clock over the posting loop).
    static func asyncThroughput(producers: Int, captured: Bool) -> Figure {
        let what = "\(producers) producer\(producers == 1 ? "" : "s")\(captured ? ", captured context" : "")"
        return Figure(
            key: "async", rows: [Row(title: "async throughput, \(what)", unit: "M ops/s", higherIsBetter: true),
                                 Row(title: "producer CPU per post, \(what)", unit: "ns", higherIsBetter: false)],
            requires: [.post, .roundTrip], summary: .medianPerRow,
            measure: .each { type, settings in
                let worker = must("start \(type.name)") { try type.init() }
                must("warm \(type.name)") { try worker.roundTrip() }
                let perProducer = settings.asyncItems / producers
                let gate = Gate()
                let producerCPU = Mutex<Double>(0)
                let context = Context()
                let threads = (0..<producers).map { producer in
                    PosixThread.spawn {
                        gate.arriveAndWait()
                        let cpuStart = threadCPUNanoseconds()
                        if captured {
                            for index in 0..<perProducer {
                                let (a, b, c) = (index, producer, index &* 3)
                                must("post") { try worker.post { context.consume(a, b, c) } }
                            }
                        } else {
                            for _ in 0..<perProducer { must("post") { try worker.post(noWork) } }
                        }
                        let spent = Double(threadCPUNanoseconds() - cpuStart)
                        producerCPU.withLock { $0 += spent }
                    }
                }
                gate.waitForArrivals(producers)
                let start = nowNanoseconds()
                gate.open()
                threads.forEach { $0.join() }
                must("round trip") { try worker.roundTrip() }
                let elapsed = Double(nowNanoseconds() - start)
                must("stop") { try worker.stop(.drain) }
                let posts = Double(perProducer * producers)
                return [posts / elapsed * 1e3, producerCPU.withLock { $0 } / posts]
            })
    }

    /// What a captured closure reaches: an object, as a real task's context holds one.
    final class Context: @unchecked Sendable {
        private var sum = 0  // written by the worker thread only
        func consume(_ a: Int, _ b: Int, _ c: Int) { sum &+= a &+ b &+ c }
    }

    // MARK: Round trip

    /// Latency of one no-op round trip from the main thread. Pinned: every thread of the process
    /// (the caller, and the pool Dispatch uses) is pinned to one CPU, new workers inherit it, and
    /// each worker pins itself from inside as well.
    ///
    /// The contenders take turns in batches: each repetition starts a fresh worker of every
    /// contender, then runs ``Settings/roundTripBatches`` batches, each contender once per round
    /// in a new random order (`TurnOrder`): a short unrecorded warm-up, then its share of the
    /// round trips. A busy host's scheduler goes through phases, seconds long, in which wake-ups
    /// wait a whole tick for any thread, the futex floor's included; run back to back, a phase
    /// lands on whichever contender is running then and decides its tail alone. Taking turns
    /// spreads it over all.
    static func roundTrip(pinned: Bool) -> Figure {
        let label = pinned ? "round trip, pinned to 1 CPU" : "round trip, unpinned"
        return Figure(
            key: pinned ? "pinned" : "roundtrip",
            rows: ["p50", "p99", "p99.9"].map { Row(title: "\(label) \($0)", unit: "µs", higherIsBetter: false) },
            requires: .roundTrip, summary: .pooledPercentiles([0.5, 0.99, 0.999]),
            measure: .together { types, settings in
                let workers = types.map { type in must("start \(type.name)") { try type.init() } }
                if pinned {
                    let cpu = settings.pinnedCPU
                    for worker in workers {
                        must("pin") {
                            try worker.runOnWorker { precondition(bench_pin_self(cpu) == 0, "cannot pin to CPU \(cpu)") }
                        }
                    }
                }
                for worker in workers {
                    for _ in 0..<settings.roundTripWarmUp { must("round trip") { try worker.roundTrip() } }
                }
                let batches = settings.roundTripBatches
                let perBatch = settings.roundTrips / batches
                var samples = workers.map { _ in [Double]() }
                for index in samples.indices { samples[index].reserveCapacity(perBatch * batches) }
                var turns = TurnOrder()
                for _ in 0..<batches {
                    for index in turns.next(workers.count) {
                        let worker = workers[index]
                        // Brings the worker's and the caller's lines back into cache after the
                        // other contenders' turns, as a back-to-back run has them.
                        for _ in 0..<settings.roundTripBatchWarmUp { must("round trip") { try worker.roundTrip() } }
                        for _ in 0..<perBatch {
                            let start = nowNanoseconds()
                            must("round trip") { try worker.roundTrip() }
                            samples[index].append(Double(nowNanoseconds() - start) / 1e3)
                        }
                    }
                }
                for worker in workers { must("stop") { try worker.stop(.drain) } }
                return samples
            },
            setUp: { settings in if pinned { ProcFS.pinAllThreads(to: settings.pinnedCPU) } },
            tearDown: { _ in if pinned { ProcFS.pinAllThreads(to: nil) } })
    }

    /// The caller's CPU time per unpinned round trip (its thread CPU clock over the loop): what a
    /// waiter that spins spends, against one that sleeps at once.
    static let callerCPU = Figure(
        key: "callercpu",
        rows: [Row(title: "caller CPU per round trip, unpinned", unit: "µs", higherIsBetter: false)],
        requires: .roundTrip, summary: .medianPerRow,
        measure: .each { type, settings in
            let worker = must("start \(type.name)") { try type.init() }
            for _ in 0..<settings.roundTripWarmUp { must("round trip") { try worker.roundTrip() } }
            let start = threadCPUNanoseconds()
            for _ in 0..<settings.roundTrips { must("round trip") { try worker.roundTrip() } }
            let spent = Double(threadCPUNanoseconds() - start)
            must("stop") { try worker.stop(.drain) }
            return [spent / Double(settings.roundTrips) / 1e3]
        })

    // MARK: Life and death

    /// Create, one round trip, a draining stop that joins the thread: a worker's whole life.
    /// The contenders take turns life by life, in a new random order each round (`TurnOrder`: the
    /// previous life decides where the next thread starts), so that a phase of the host's
    /// scheduler falls on all of them alike (see ``roundTrip(pinned:)``); each contender's value
    /// is the median of its lives in the repetition.
    static let lifecycle = Figure(
        key: "lifecycle",
        rows: [Row(title: "create + 1 sync task + stop + join", unit: "µs", higherIsBetter: false)],
        requires: [], summary: .medianPerRow,
        measure: .together { types, settings in
            func cycle(_ type: any Contender.Type) -> Double {
                let start = nowNanoseconds()
                do {
                    let worker = must("start \(type.name)") { try type.init() }
                    must("round trip") { try worker.roundTrip() }
                    must("stop") { try worker.stop(.drain) }
                    // Released inside the timed region: what a peer frees in its deinit (a CF
                    // peer's run loop and its descriptors) is part of its life too.
                    withExtendedLifetime(worker) {}
                }
                return Double(nowNanoseconds() - start) / 1e3
            }
            for type in types { _ = cycle(type) }
            var lives = types.map { _ in [Double]() }
            var turns = TurnOrder()
            for _ in 0..<settings.lifecycles {
                for index in turns.next(types.count) { lives[index].append(cycle(types[index])) }
            }
            return lives.map { [Statistics.median($0)] }
        })

    /// A worker held busy by a gate item while `queued` no-ops are posted behind it; timed from
    /// opening the gate to the return of a stop that has joined the thread.
    static func stopLatency(_ pending: Pending, queued: Int) -> Figure {
        let what = pending == .drain ? "drain" : "discard"
        return Figure(
            key: "stop",
            rows: [Row(title: "stop (\(what)) with \(queued.formatted) queued", unit: "ms", higherIsBetter: false)],
            requires: pending == .drain ? .post : [.post, .discard], summary: .medianPerRow,
            measure: .each { type, _ in
                let worker = must("start \(type.name)") { try type.init() }
                let gate = Gate()
                must("post") { try worker.post { gate.arriveAndWait() } }
                for _ in 0..<queued { must("post") { try worker.post(noWork) } }
                gate.waitForArrivals(1)
                let start = nowNanoseconds()
                gate.open()
                must("stop") { try worker.stop(pending) }
                return [Double(nowNanoseconds() - start) / 1e6]
            })
    }
}

extension Int {
    /// 1000000 → "1,000,000".
    var formatted: String {
        let digits = String(self)
        var result = ""
        for (index, digit) in digits.enumerated() {
            if index > 0 && (digits.count - index) % 3 == 0 { result += "," }
            result.append(digit)
        }
        return result
    }
}
