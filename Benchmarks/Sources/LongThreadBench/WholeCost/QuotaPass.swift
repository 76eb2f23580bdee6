/// Round trips 100 µs apart (the caller sleeping) with the whole benchmark inside a cgroup CPU
/// quota of half a CPU (`CPUQuotaGroup`): a waiter that spins burns the quota its caller and its
/// neighbours need, and the group is throttled until the next period. The group is removed after
/// the pass; a machine where it cannot be made reports the reason and no figures.
enum QuotaPass {
    static let fraction = 0.5
    static let gap = Gap.sleeping(microseconds: 100)

    struct Outcome {
        var results: [RowResult]
        /// The group and its throttling counters, or why the pass was skipped.
        var note: String
    }

    static let figure = Figure(
        key: "quota",
        rows: [Row(title: "round trip p99, quota ½ CPU, \(gap.label) between", unit: "µs", higherIsBetter: false,
                   target: .ratioAtMost(1.1)),
               Row(title: "round trip p50, quota ½ CPU, \(gap.label) between", unit: "µs", higherIsBetter: false),
               Row(title: "total CPU per round trip, quota ½ CPU, \(gap.label) between", unit: "µs", higherIsBetter: false)],
        requires: .roundTrip, summary: .medianPerRow,
        measure: .each { type, settings in
            let result = WholeCost.pacedRun(type, count: settings.quotaRoundTrips, gap: gap, settings)
            return [Statistics.percentile(result.samples, 0.99), Statistics.percentile(result.samples, 0.5), result.totalCPU]
        })

    static func run(_ contenders: [any Contender.Type], _ settings: Settings, root: String = "/sys/fs/cgroup") -> Outcome {
        Runner.progress("quota pass: a cgroup of \(fraction) CPU under \(root)")
        // Measured outside the group, before it: the idle rate is the process's, not the quota's.
        WholeCost.prepare(settings)
        do {
            return try CPUQuotaGroup.with(root: root, fraction: fraction, threads: benchmarkThreads) { group in
                let results = Runner.run([figure], contenders, settings)
                return Outcome(results: results, note: "cgroup \(group.version) group \(group.path), quota "
                               + "\"\(group.quota)\"; at the end: \(group.throttling())")
            }
        } catch {
            Runner.progress("quota pass skipped: \(error)")
            return Outcome(results: [], note: "skipped: \(error)")
        }
    }

    /// Every thread of this process but the hogs, which load the machine and not the group.
    static func benchmarkThreads() -> [Int32] {
        let hogs = Hogs.threadIDs
        return ProcFS.threadIDs().filter { !hogs.contains($0) }
    }
}
