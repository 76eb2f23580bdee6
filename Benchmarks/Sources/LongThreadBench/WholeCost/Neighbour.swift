import CBenchSupport
import Glibc

/// A CPU-bound neighbour process (a forked child counting steps of `bench_compute`, see
/// `bench_spawn_spinner`): how much of its throughput it keeps while a contender serves a caller
/// on this process, against the same child alone just before. A waiter that spins or lingers
/// takes its CPU from whoever else wants it; this is who.
enum Neighbour {
    /// The neighbour's steps and the wall seconds they took, over one window of `seconds`,
    /// while `load` runs (or alone, when `load` is nil). `counter` is the child's shared counter.
    static func window(_ counter: UnsafeMutablePointer<UInt64>, seconds: Double,
                       load: ((UInt64) -> Void)?) -> (steps: Double, seconds: Double) {
        let before = bench_load_counter(counter)
        let start = nowNanoseconds()
        let end = start + UInt64(seconds * 1e9)
        if let load { load(end) } else { sleepFor(seconds: seconds) }
        let elapsed = Double(nowNanoseconds() - start) / 1e9
        return (Double(bench_load_counter(counter) - before), elapsed)
    }

    /// The neighbour's rate with `load` over its rate alone, from windows taken in the order
    /// alone, loaded, loaded, alone (twice), `seconds` in all for each: a drift of the machine's
    /// other work over the measurement falls on both sides alike.
    static func share(_ counter: UnsafeMutablePointer<UInt64>, seconds: Double, load: @escaping (UInt64) -> Void) -> Double {
        var alone = (steps: 0.0, seconds: 0.0), loaded = (steps: 0.0, seconds: 0.0)
        for loads in [false, true, true, false, false, true, true, false] {
            let taken = window(counter, seconds: seconds / 4, load: loads ? load : nil)
            if loads {
                loaded = (loaded.steps + taken.steps, loaded.seconds + taken.seconds)
            } else {
                alone = (alone.steps + taken.steps, alone.seconds + taken.seconds)
            }
        }
        let aloneRate = alone.steps / alone.seconds
        return aloneRate > 0 ? loaded.steps / loaded.seconds / aloneRate : 0
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
    /// round trips, back to back and then 100 µs apart (sleeping): two rows. Each share takes
    /// `seconds` alone and `seconds` loaded.
    static func shares(_ type: any Contender.Type, seconds: Double) -> [Double] {
        withSpinner { counter in
            let worker = must("start \(type.name)") { try type.init() }
            must("warm") { try worker.roundTrip() }
            let shares = [Gap.none, .sleeping(microseconds: 100)].map { gap in
                share(counter, seconds: seconds) { end in
                    Pacer.withExactSleeps {
                        while nowNanoseconds() < end {
                            Pacer.pause(gap, steps: 0)
                            must("round trip") { try worker.roundTrip() }
                        }
                    }
                }
            }
            must("stop") { try worker.stop(.drain) }
            return shares
        }
    }
}
