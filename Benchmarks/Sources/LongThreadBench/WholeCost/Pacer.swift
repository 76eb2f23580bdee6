import CBenchSupport
import Glibc

/// What a caller does between two requests.
enum Gap: Sendable, Equatable {
    /// Back to back: the next request as soon as the last one returns.
    case none
    /// `nanosleep` for this many microseconds (timer slack set to 1 ns meanwhile, so the sleep
    /// is the gap and not up to 50 µs more).
    case sleeping(microseconds: Int)
    /// A computation of about this many microseconds of CPU (`bench_compute`, calibrated).
    case computing(microseconds: Int)

    /// The gap's length (0 back to back).
    var microseconds: Int {
        switch self {
        case .none: 0
        case .sleeping(let value), .computing(let value): value
        }
    }

    var label: String {
        switch self {
        case .none: "back to back"
        case .sleeping(let gap): "sleeping \(gap) µs"
        case .computing(let gap): "computing \(gap) µs"
        }
    }
}

/// One caller's round trips, each after a `Gap`, timed and costed.
struct PacedResult {
    /// Round-trip latencies, in µs (the gap excluded).
    var samples: [Double]
    /// CPU of every thread but the hogs per round trip, in µs, less the caller's CPU in its gaps.
    var totalCPU: Double
    /// The caller's own CPU per round trip, in µs, less its gaps.
    var callerCPU: Double
}

enum Pacer {
    /// `bench_compute` steps per microsecond of this thread's CPU: the best of five 20 ms runs
    /// (the fastest is the one least disturbed by other work on the CPU).
    static let stepsPerMicrosecond: Double = {
        var best = 0.0
        for _ in 0..<5 {
            let steps: UInt64 = 20_000_000
            let start = threadCPUNanoseconds()
            blackHole(bench_compute(steps))
            let spent = Double(threadCPUNanoseconds() - start)
            best = max(best, Double(steps) / (spent / 1e3))
        }
        return best
    }()

    /// `count` round trips, each after `gap`, on the calling thread. The CPU the caller spends in
    /// its gaps (computing or going to sleep and waking) is measured by its thread clock around
    /// each gap and taken out of both CPU figures: what is left is the round trips' cost.
    static func run(count: Int, gap: Gap, _ roundTrip: () throws -> Void) rethrows -> PacedResult {
        precondition(count > 0)
        let slack = bench_swap_timer_slack(1)
        defer { restoreTimerSlack(slack) }
        return try measure(count: count, gap: gap, steps: computeSteps(gap), roundTrip)
    }

    /// Runs `body` with the calling thread's timer slack at 1 ns (restored after), so that a
    /// sleeping gap of 20 µs is 20 µs and not up to 70.
    static func withExactSleeps<T>(_ body: () throws -> T) rethrows -> T {
        let slack = bench_swap_timer_slack(1)
        defer { restoreTimerSlack(slack) }
        return try body()
    }

    private static func restoreTimerSlack(_ previous: Int) {
        if previous > 0 { _ = bench_swap_timer_slack(UInt(previous)) }
    }

    private static func measure(count: Int, gap: Gap, steps: UInt64, _ roundTrip: () throws -> Void) rethrows -> PacedResult {
        var samples: [Double] = []
        samples.reserveCapacity(count)
        var gapCPU: UInt64 = 0
        let start = CPUReading.now()
        let callerStart = threadCPUNanoseconds()
        for _ in 0..<count {
            if gap != .none {
                let before = threadCPUNanoseconds()
                pause(gap, steps: steps)
                gapCPU += threadCPUNanoseconds() - before
            }
            let begin = nowNanoseconds()
            try roundTrip()
            samples.append(Double(nowNanoseconds() - begin) / 1e3)
        }
        let caller = Double(threadCPUNanoseconds() - callerStart) - Double(gapCPU)
        let total = CPUReading.now().spent(since: start) - Double(gapCPU)
        return PacedResult(samples: samples, totalCPU: max(0, total) / Double(count) / 1e3,
                           callerCPU: max(0, caller) / Double(count) / 1e3)
    }

    /// The steps of a computing gap (0 for the others).
    static func computeSteps(_ gap: Gap) -> UInt64 {
        guard case .computing(let microseconds) = gap else { return 0 }
        return UInt64(Double(microseconds) * stepsPerMicrosecond)
    }

    /// One gap: a sleep, a computation, or nothing.
    static func pause(_ gap: Gap, steps: UInt64) {
        switch gap {
        case .none:
            break
        case .sleeping(let microseconds):
            var request = timespec(tv_sec: microseconds / 1_000_000, tv_nsec: (microseconds % 1_000_000) * 1_000)
            var remaining = timespec()
            while nanosleep(&request, &remaining) != 0 && errno == EINTR { request = remaining }
        case .computing:
            blackHole(bench_compute(steps))
        }
    }
}
