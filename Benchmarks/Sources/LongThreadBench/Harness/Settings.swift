import ArgumentParser

/// Sizes of every figure, from the command line.
struct Settings: Sendable {
    var quick = false
    var repetitions = 5
    var only: [String] = []
    var pinnedCPU: Int32 = 0
    var idleSeconds = 5.0
    /// CPU-bound threads running during every measurement (the loaded condition).
    var hogs = 0
    /// The conditions a run measures in turn, as hog counts (`--hogs 0,2`: idle, then 2 hogs).
    var hogConditions = [0]
    /// Where to write the report as well as standard output.
    var outputPath: String?
    /// Where to write the results with their conditions (default for a full run: Benchmarks/RESULTS.md).
    var resultsPath: String?
    /// `--no-results`: a full run that leaves RESULTS.md as it is.
    var noResults = false
    /// A sentence for the conditions (e.g. what else the machine was doing).
    var note: String?

    /// Every figure at its full size: the run whose results replace RESULTS.md.
    var isFullRun: Bool { !quick && only.isEmpty }

    // Derived sizes: full runs, or a smoke pass with `--quick`.
    var asyncItems: Int { quick ? 100_000 : 1_000_000 }
    var roundTrips: Int { quick ? 2_000 : 20_000 }
    var roundTripWarmUp: Int { quick ? 200 : 2_000 }
    /// Turns each contender takes per repetition of a round-trip figure, and the unrecorded
    /// round trips that open each turn.
    var roundTripBatches: Int { quick ? 4 : 20 }
    var roundTripBatchWarmUp: Int { 20 }
    var lifecycles: Int { quick ? 20 : 200 }
    var stopQueueSizes: [Int] { quick ? [10_000, 100_000] : [10_000, 1_000_000] }
    var idleWorkers: Int { quick ? 20 : 100 }
    var allocationItems: Int { quick ? 2_000 : 20_000 }
    var overloadSeconds: Double { quick ? 0.4 : 2 }
    var producerCounts: [Int] { [1, 2, 4, 8] }
    // Scaling (LongThread alone).
    var idleThreadCounts: [Int] { quick ? [1, 100] : [1, 100, 1_000] }
    var watchCounts: [Int] { quick ? [10, 1_000] : [10, 1_000, 10_000] }
    var wakeUpSamples: Int { quick ? 200 : 2_000 }
    var timerCounts: [Int] { quick ? [1, 1_000] : [1, 1_000, 100_000] }
    var echoConnections: Int { quick ? 100 : 1_000 }
    var echoSeconds: Double { quick ? 0.5 : 2 }
    // The whole cost.
    /// Round trips of one paced run: fewer at long gaps, so that each run takes about a second.
    func pacedRoundTrips(gap microseconds: Int) -> Int {
        quick ? (microseconds >= 1_000 ? 200 : 500) : (microseconds >= 1_000 ? 1_000 : 4_000)
    }
    var pairCounts: [Int] { [4, 16, 64] }
    var pairSeconds: Double { quick ? 0.25 : 1 }
    var neighbourSeconds: Double { quick ? 0.25 : 1 }
    var quotaRoundTrips: Int { quick ? 500 : 3_000 }

}

/// The command line, parsed by swift-argument-parser (`--help`, `--version`, errors on standard
/// error, exit status 64 for bad usage), turned into ``Settings``.
struct BenchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "longthread-bench",
        abstract: "LongThread side by side with its peers and floors, in one table.",
        version: benchVersion
    )

    @Flag(help: "Smoke pass: small sizes, 2 repetitions, 0.5 s idle period.")
    var quick = false

    @Option(name: .customLong("reps"), help: ArgumentHelp("Repetitions of each figure (default 5, or 2 with --quick; each on a fresh worker).", valueName: "n"))
    var repetitions: Int?

    @Option(name: .customLong("only"), parsing: .singleValue, help: ArgumentHelp(
        "Contenders and/or figures to run, comma-separated (substring match, case-insensitive); LongThread always runs, as every ratio needs it. --list shows the names.",
        valueName: "names"))
    var only: [String] = []

    @Option(name: .customLong("cpu"), help: ArgumentHelp("CPU for the pinned round trip.", valueName: "n"))
    var pinnedCPU: Int32 = 0

    @Option(name: .customLong("idle"), help: ArgumentHelp("Idle period of the idle figure, in seconds (default 5, or 0.5 with --quick).", valueName: "seconds"))
    var idleSeconds: Double?

    @Option(name: .customLong("hogs"), help: ArgumentHelp(
        "Run N CPU-bound threads during every measurement (a busy host). A list (0,2) measures each condition in turn, in one report and one results file.",
        valueName: "n[,n...]"))
    var hogs: String = "0"

    /// `--hogs` as counts, or nil if it is not a list of counts.
    var hogConditions: [Int]? {
        let counts = hogs.split(separator: ",").map { Int($0.trimmingPrefix(" ")) }
        guard !counts.isEmpty, counts.allSatisfy({ ($0 ?? -1) >= 0 }) else { return nil }
        return counts.compactMap { $0 }
    }

    @Option(name: .customLong("output"), help: ArgumentHelp("Also write the markdown report to this file (e.g. idle.md, hogs2.md).", valueName: "file"))
    var output: String?

    @Option(name: .customLong("results"), help: ArgumentHelp(
        "Write the results with their conditions to this file. A full run (no --only, no --quick) writes Benchmarks/RESULTS.md unless told otherwise; a partial run writes only here.",
        valueName: "file"))
    var results: String?

    @Flag(name: .customLong("no-results"), help: "Do not write the results file (a full run writes Benchmarks/RESULTS.md by default).")
    var noResults = false

    @Option(name: .customLong("note"), help: ArgumentHelp("A sentence added to the results' conditions (e.g. \"machine busy with builds\").", valueName: "text"))
    var note: String?

    @Flag(help: "List the contenders and figures, and exit.")
    var list = false

    func validate() throws {
        if let repetitions, repetitions <= 0 { throw ValidationError("--reps takes a positive number") }
        if let idleSeconds, !(idleSeconds >= 0 && idleSeconds.isFinite) { throw ValidationError("--idle takes seconds") }
        guard pinnedCPU >= 0 else { throw ValidationError("--cpu takes a CPU number") }
        guard hogConditions != nil else { throw ValidationError("--hogs takes a count, or counts separated by commas") }
        if noResults && results != nil { throw ValidationError("--no-results and --results contradict each other") }
    }

    var settings: Settings {
        var settings = Settings()
        settings.quick = quick
        settings.only = only.flatMap { $0.split(separator: ",").map { $0.lowercased() } }
        settings.pinnedCPU = pinnedCPU
        settings.repetitions = repetitions ?? (quick ? 2 : 5)
        settings.idleSeconds = idleSeconds ?? (quick ? 0.5 : 5)
        settings.hogConditions = hogConditions ?? [0]
        settings.hogs = settings.hogConditions[0]
        settings.outputPath = output
        settings.resultsPath = results
        settings.noResults = noResults
        settings.note = note
        return settings
    }
}

/// `longthread-bench --version` prints this.
let benchVersion = "0.1.0"
