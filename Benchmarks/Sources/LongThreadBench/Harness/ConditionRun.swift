/// One condition of a run (idle, or N hogs): every chosen figure measured under it, and the
/// report of it without the machine's description (which the caller prints once).
struct ConditionRun {
    let settings: Settings
    let contenders: [any Contender.Type]
    /// The figures of the main table.
    let mainFigures: [Figure]
    /// The whole-cost figures but the quota pass.
    let wholeCostFigures: [Figure]
    let runsQuota: Bool
    let runsScaling: Bool
    let runsPropagation: Bool

    /// "idle (no hogs)" or "2 CPU hogs".
    var condition: String { settings.hogs == 0 ? "idle (no hogs)" : "\(settings.hogs) CPU hogs" }

    /// Starts the hogs, measures, stops them; returns the report's body (repetitions line,
    /// tables, bars) and the load average at the end.
    func measure() -> (body: String, loadAtEnd: String) {
        Runner.progress("condition: \(condition)")
        Hogs.start(settings.hogs)
        let results = Runner.run(mainFigures, contenders, settings)
        let wholeCost = Runner.run(wholeCostFigures, contenders, settings)
        let quota = runsQuota ? QuotaPass.run(contenders, settings) : nil
        let scaling = runsScaling ? Scaling.run(settings) : []
        if runsPropagation { Runner.progress("context propagation") }
        let propagation = runsPropagation ? [Propagation.run(settings)] : []
        let loadAtEnd = Machine.loadAverage()
        Hogs.stop()
        var lines = [repetitionsLine]
        if !results.isEmpty { lines.append(Report.table(results, contenders)) }
        lines.append("\nLoad average at the end: \(loadAtEnd) (1, 5, 15 min; runnable/total threads).")
        if !results.isEmpty { lines.append(Self.legend) }
        let bars = Report.bars(results, hogs: settings.hogs)
        if !bars.isEmpty { lines += ["### Bars against the peers and floors\n", bars.joined(separator: "\n")] }
        if !wholeCost.isEmpty || quota != nil {
            lines += [WholeCost.preamble(settings), WholeCostReport.table(wholeCost + (quota?.results ?? []), contenders)]
            if let quota { lines.append("\nQuota pass: \(quota.note)") }
        }
        if !scaling.isEmpty { lines += ["\n### Cost as work grows (LongThread alone)\n", Scaling.markdown(scaling)] }
        if !propagation.isEmpty {
            lines += ["\n### What carrying trace context costs a post (LongThread alone, LongThreadsTracing)\n",
                      Scaling.markdown(propagation)]
        }
        return (lines.map { $0 + "\n" }.joined(), loadAtEnd)
    }

    private var repetitionsLine: String {
        "- Repetitions: \(settings.repetitions) per figure, interleaved in a new random order each (seeded), a fresh worker each; "
            + "async: \(settings.asyncItems.formatted) no-op closures per run; round trips: "
            + "\(settings.roundTrips.formatted) per repetition in \(settings.roundTripBatches) turns per contender, "
            + "pooled for percentiles; lives taken in turns (a new random order each round); idle period: "
            + "\(settings.idleSeconds) s; \(settings.idleWorkers) idle workers for memory\n"
    }

    private static let legend = "\nA peer's cell reads `value (r×)`: r is how many times better LongThread is than that peer on "
        + "the row (throughput: LongThread ÷ peer; times, counts and sizes: peer ÷ LongThread); r > 1 "
        + "means LongThread leads. Single values are medians over repetitions; percentiles pool all "
        + "round trips. n/a: the contender cannot do that (see Benchmarks/README.md).\n"
}
