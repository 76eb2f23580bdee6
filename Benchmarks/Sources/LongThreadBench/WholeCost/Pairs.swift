import Glibc
import Synchronization

/// N pairs at once, each a caller thread making back-to-back round trips to a worker of its own
/// (its own LongThread, its own event loop, its own serial queue...), for a fixed time: the
/// total throughput, and how fairly the machine served them.
enum Pairs {
    struct Result {
        /// Round trips per second, all pairs together.
        var throughput: Double
        /// The slowest pair's round trips as a fraction of the mean pair's (1 = perfectly fair).
        var slowestShare: Double
    }

    /// The slowest pair's count over the mean count; 0 when no pair made a round trip.
    static func slowestShare(_ counts: [Int]) -> Double {
        guard let slowest = counts.min(), !counts.isEmpty else { return 0 }
        let mean = Double(counts.reduce(0, +)) / Double(counts.count)
        return mean > 0 ? Double(slowest) / mean : 0
    }

    /// Starts `pairs` workers of `type`, releases their callers together, stops them after
    /// `seconds`. A round trip in flight at the stop completes and counts (one per pair at most).
    static func run(_ type: any Contender.Type, pairs: Int, seconds: Double) -> Result {
        let workers = (0..<pairs).map { _ in must("start \(type.name)") { try type.init() } }
        for worker in workers { must("warm \(type.name)") { try worker.roundTrip() } }
        let gate = Gate()
        let stopRequested = Atomic<Bool>(false)
        let counts = Mutex<[Int]>(Array(repeating: 0, count: pairs))
        let callers = workers.enumerated().map { index, worker in
            PosixThread.spawn {
                gate.arriveAndWait()
                var count = 0
                while !stopRequested.load(ordering: .relaxed) {
                    must("round trip") { try worker.roundTrip() }
                    count += 1
                }
                counts.withLock { $0[index] = count }
            }
        }
        gate.waitForArrivals(pairs)
        let start = nowNanoseconds()
        gate.open()
        sleepFor(seconds: seconds)
        stopRequested.store(true, ordering: .relaxed)
        let elapsed = Double(nowNanoseconds() - start) / 1e9
        callers.forEach { $0.join() }
        for worker in workers { must("stop") { try worker.stop(.drain) } }
        let final = counts.withLock { $0 }
        return Result(throughput: Double(final.reduce(0, +)) / elapsed, slowestShare: slowestShare(final))
    }
}

/// Sleeps the calling thread for `seconds` of wall time (through signals).
func sleepFor(seconds: Double) {
    let end = nowNanoseconds() + UInt64(seconds * 1e9)
    while true {
        let now = nowNanoseconds()
        if now >= end { return }
        usleep(UInt32(min((end - now) / 1_000, 1_000_000)))
    }
}
