import CBenchSupport
import Glibc

/// A CPU-bound neighbour process (a forked child counting steps of `bench_compute`, see
/// `bench_spawn_spinner`): how much of its throughput it keeps while a contender serves a caller
/// on this process, against the same child alone just before. A waiter that spins or lingers
/// takes its CPU from whoever else wants it; this is who.
enum Neighbour {
    /// The neighbour's steps per second while `load` runs (or alone, when `load` is nil), over
    /// `seconds`. `counter` is the child's shared counter.
    static func rate(_ counter: UnsafeMutablePointer<UInt64>, seconds: Double, load: ((UInt64) -> Void)?) -> Double {
        let before = bench_load_counter(counter)
        let start = nowNanoseconds()
        let end = start + UInt64(seconds * 1e9)
        if let load { load(end) } else { sleepFor(seconds: seconds) }
        let elapsed = Double(nowNanoseconds() - start) / 1e9
        return Double(bench_load_counter(counter) - before) / elapsed
    }

    /// Runs `body` with a spinning child alive, passing its counter; the child is killed after.
    static func withSpinner<T>(_ body: (UnsafeMutablePointer<UInt64>) -> T) -> T {
        guard let counter = bench_shared_counter() else { fatalError("mmap of the neighbour's counter failed: \(errno)") }
        defer { munmap(counter, MemoryLayout<UInt64>.size) }
        let child = bench_spawn_spinner(counter)
        precondition(child > 0, "cannot fork the neighbour: \(errno)")
        defer { _ = bench_kill_spinner(child) }
        // Until the child has run: its first steps land after the fork returns.
        while bench_load_counter(counter) == 0 { usleep(1_000) }
        return body(counter)
    }

    /// The neighbour's share (with ÷ alone) while one worker of `type` serves the main thread's
    /// round trips, back to back and then 100 µs apart (sleeping): two rows.
    static func shares(_ type: any Contender.Type, seconds: Double) -> [Double] {
        withSpinner { counter in
            let worker = must("start \(type.name)") { try type.init() }
            must("warm") { try worker.roundTrip() }
            var shares: [Double] = []
            for gap in [Gap.none, .sleeping(microseconds: 100)] {
                let alone = rate(counter, seconds: seconds, load: nil)
                let steps = Pacer.computeSteps(gap)
                let loaded = rate(counter, seconds: seconds) { end in
                    Pacer.withExactSleeps {
                        while nowNanoseconds() < end {
                            Pacer.pause(gap, steps: steps)
                            must("round trip") { try worker.roundTrip() }
                        }
                    }
                }
                shares.append(alone > 0 ? loaded / alone : 0)
            }
            must("stop") { try worker.stop(.drain) }
            return shares
        }
    }
}
