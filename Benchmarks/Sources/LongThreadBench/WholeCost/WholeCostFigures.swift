/// The whole cost of a round trip: the CPU of every thread it takes, at every pace of caller, with
/// many pairs at once, beside a CPU-bound neighbour and inside a CPU quota. Each contender runs
/// alone (`.each`), so a difference of process CPU readings is its own cost.
enum WholeCost {
    /// Figure keys, for `--only` and to tell these rows from the main table's.
    static let keys = ["wholecost", "paced", "pairs", "neighbour", "quota"]
    /// Each ratio is LongThread's value over the best of these four peers' (the floors and
    /// Thread+PerformBlock are shown but never the bar).
    static let referencePeers = [DispatchPeer.name, CondvarPeer.name, NIOPeer.name, CFSource0Peer.name]
    static let cpuTarget = Target.ratioAtMost(1.1)

    /// Measures the process's idle rate and calibrates the computing gap before the first
    /// figure, with no worker alive (each is measured once, on first use).
    static func prepare(_ settings: Settings) {
        _ = CPUReading.idleRate
        _ = Pacer.stepsPerMicrosecond
    }

    /// Every whole-cost figure but the quota pass (which needs its group: `QuotaPass`).
    static func figures(_ settings: Settings) -> [Figure] {
        var figures = [paced(.none)]
        for mode in ["sleeping", "computing"] {
            for gap in [20, 100, 1_000] {
                figures.append(paced(mode == "sleeping" ? .sleeping(microseconds: gap) : .computing(microseconds: gap)))
            }
        }
        figures += settings.pairCounts.map(pairs)
        figures.append(neighbour)
        return figures
    }

    /// Round trips back to back ("wholecost"), or with a gap before each, the caller sleeping or
    /// computing between requests ("paced"): the total CPU, the caller's share, the latency.
    static func paced(_ gap: Gap) -> Figure {
        let between = gap == .none ? gap.label : "\(gap.label) between"
        return Figure(
            key: gap == .none ? "wholecost" : "paced",
            rows: [Row(title: "total CPU per round trip, \(between)", unit: "µs", higherIsBetter: false, target: cpuTarget),
                   Row(title: "caller CPU per round trip, \(between)", unit: "µs", higherIsBetter: false),
                   Row(title: "round trip p50, \(between)", unit: "µs", higherIsBetter: false),
                   Row(title: "round trip p99, \(between)", unit: "µs", higherIsBetter: false)],
            requires: .roundTrip, summary: .medianPerRow,
            measure: .each { type, settings in
                let count = gap == .none ? settings.roundTrips : settings.pacedRoundTrips(gap: gap.microseconds)
                let result = pacedRun(type, count: count, gap: gap, settings)
                return [result.totalCPU, result.callerCPU,
                        Statistics.percentile(result.samples, 0.5), Statistics.percentile(result.samples, 0.99)]
            },
            setUp: prepare)
    }

    /// A fresh worker, warmed up with back-to-back round trips, then `count` paced ones.
    static func pacedRun(_ type: any Contender.Type, count: Int, gap: Gap, _ settings: Settings) -> PacedResult {
        let worker = must("start \(type.name)") { try type.init() }
        for _ in 0..<settings.roundTripBatchWarmUp { must("round trip") { try worker.roundTrip() } }
        let result = must("paced round trips") { try Pacer.run(count: count, gap: gap) { try worker.roundTrip() } }
        must("stop") { try worker.stop(.drain) }
        return result
    }

    /// N pairs at once: throughput, and the slowest pair's share of the mean.
    static func pairs(_ count: Int) -> Figure {
        Figure(
            key: "pairs",
            rows: [Row(title: "throughput, \(count) pairs", unit: "k/s", higherIsBetter: true, target: .ratioAtLeast(1.0)),
                   Row(title: "slowest pair's share of the mean, \(count) pairs", unit: "fraction", higherIsBetter: true,
                       target: .ratioAtLeast(0.8))],
            requires: .roundTrip, summary: .medianPerRow,
            measure: .each { type, settings in
                let result = Pairs.run(type, pairs: count, seconds: settings.pairSeconds)
                return [result.throughput / 1e3, result.slowestShare]
            },
            setUp: prepare)
    }

    /// What a CPU-bound neighbour process keeps of its throughput alone.
    static let neighbour = Figure(
        key: "neighbour",
        rows: [Gap.none, .sleeping(microseconds: 100)].map { gap in
            Row(title: "neighbour process's throughput kept, caller \(gap.label)", unit: "fraction",
                higherIsBetter: true, target: .valueAtLeast(0.95))
        },
        requires: .roundTrip, summary: .medianPerRow,
        measure: .each { type, settings in Neighbour.shares(type, seconds: settings.neighbourSeconds) },
        setUp: prepare)
}

extension WholeCost {
    /// What the whole-cost table measures, printed above it.
    static func preamble(_ settings: Settings) -> String {
        """

        ### The whole cost of a round trip

        Each contender alone, a fresh worker per repetition. Total CPU: the process's CPU clock \
        (CLOCK_PROCESS_CPUTIME_ID: every thread, the caller, the worker and any pool thread, ended ones \
        included) less the hogs' threads and less the process's idle rate, per round trip; the caller's \
        CPU in its gaps (measured by its thread clock around each gap) is taken out. Sleeping gaps are \
        nanosleep with a timer slack of 1 ns; computing gaps are a calibrated register-only loop \
        (\(Int(Pacer.stepsPerMicrosecond)) steps per µs here). Values are medians over \(settings.repetitions) \
        repetitions (percentiles within each). Pairs: N callers, each with its own worker, back to back \
        for \(settings.pairSeconds) s. Neighbour: a forked process counting steps, its rate with the \
        contender serving the main thread ÷ its rate alone just before. Ratio: LongThread ÷ the best of \
        \(referencePeers.joined(separator: ", ")); the bar column gives a row's limit and whether \
        LongThread meets it (✓ or ✗).

        """
    }
}
