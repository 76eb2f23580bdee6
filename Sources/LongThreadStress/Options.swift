import ArgumentParser

/// Command-line options, parsed by swift-argument-parser: `--help`, `--version`, errors on
/// standard error, exit status 64 for bad usage.
struct Options: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "longthread-stress",
        abstract: "Stop-and-teardown stress for LongThread.",
        discussion: """
        Runs stop-and-teardown scenarios against LongThread and checks that no work is lost, nothing \
        hangs, and no thread or file descriptor leaks. Stops after N cycles or SECONDS, whichever first. \
        --seed replays a run's random choices exactly; --print-plan prints the scenario of each cycle.
        Exit status: 0 clean, 1 lost work or leaks, 2 a hang, 64 bad usage.
        """,
        version: stressToolVersion
    )

    @Option(name: .customLong("cycles"), help: "Stop after this many cycles.")
    var cycles = 1_000

    @Option(name: .customLong("producers"), help: "Producer threads per cycle (at least 1).")
    var producerCount = 3

    @Option(name: .customLong("parallel"), help: ArgumentHelp(
        "Cycles run at once, each runner on a thread of its own (at least 1). With 1 (the default) a seed replays "
            + "a run exactly; with more, each runner's choices replay, not their interleaving.",
        valueName: "runners"))
    var parallelCount = 1

    @Option(name: .customLong("duration"), help: ArgumentHelp("Stop after this long, in seconds (fractions allowed).", valueName: "seconds"))
    var durationSeconds: Double?

    @Option(name: .customLong("scenario"), help: ArgumentHelp("One scenario (see --list), or 'mixed' (the default).", valueName: "name"))
    var scenarioName = "mixed"

    @Option(name: .customLong("seed"), help: "Seed of the random choices (default: random); replays a run.")
    var seed: UInt64 = UInt64(UInt32.random(in: 1...UInt32.max))

    @Option(name: .customLong("hang-timeout"), help: ArgumentHelp("A cycle running longer than this is a hang (seconds, at least 1).", valueName: "seconds"))
    var hangTimeoutSeconds: Double = 10

    @Flag(help: "No progress lines, only the summary.")
    var quiet = false

    @Flag(help: "Print the scenario and choices of each cycle.")
    var printPlan = false

    @Flag(help: "List the scenarios and exit.")
    var list = false

    var producers: Int { max(1, producerCount) }
    var parallel: Int { max(1, parallelCount) }
    var duration: Duration? { durationSeconds.map { .seconds($0) } }
    var hangTimeout: Duration { .seconds(max(1, hangTimeoutSeconds)) }
    /// nil: mixed.
    var scenario: Scenario? { Scenario(rawValue: scenarioName) }

    mutating func validate() throws {
        if list {
            print(Scenario.allCases.map { "\($0.rawValue): \($0.summary)" }.joined(separator: "\n"))
            throw CleanExit.message("")
        }
        guard scenarioName == "mixed" || Scenario(rawValue: scenarioName) != nil else {
            throw ValidationError("unknown scenario \(scenarioName); --list shows them")
        }
        guard cycles >= 0 else { throw ValidationError("--cycles must not be negative") }
        if let durationSeconds, !(durationSeconds >= 0 && durationSeconds.isFinite) {
            throw ValidationError("--duration takes a number of seconds, not \(durationSeconds)")
        }
        guard hangTimeoutSeconds.isFinite else { throw ValidationError("--hang-timeout takes a number of seconds") }
    }
}

/// The version `--version` prints.
let stressToolVersion = "0.1.0"

/// SplitMix64: small, fast, and the same sequence for the same seed on every machine, so a run's
/// choices replay exactly from its seed.
struct SeededGenerator: RandomNumberGenerator {
    private var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
