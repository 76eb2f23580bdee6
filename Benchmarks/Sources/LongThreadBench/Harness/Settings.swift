import Glibc

/// Sizes of every figure, from the command line.
struct Settings: Sendable {
    var quick = false
    var repetitions = 5
    var only: [String] = []
    var pinnedCPU: Int32 = 0
    var idleSeconds = 5.0
    /// CPU-bound threads running during every measurement (the loaded condition).
    var hogs = 0
    /// Where to write the report as well as standard output.
    var outputPath: String?

    // Derived sizes: full runs, or a smoke pass with `--quick`.
    var asyncItems: Int { quick ? 100_000 : 1_000_000 }
    var roundTrips: Int { quick ? 2_000 : 20_000 }
    var roundTripWarmUp: Int { quick ? 200 : 2_000 }
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

    static let usage = """
        usage: longthread-bench [--quick] [--reps N] [--only NAME[,NAME...]] [--cpu N] [--idle SECONDS]
                                [--hogs N] [--output FILE]
          --quick         smoke pass: small sizes, 2 repetitions, 0.5 s idle period
          --reps N        repetitions of each figure (default 5; each on a fresh worker)
          --only NAMES    contenders and/or figures to run (substring match, case-insensitive);
                          LongThread always runs, as every ratio needs it. --list shows the names.
          --cpu N         CPU for the pinned round trip (default 0)
          --idle SECONDS  idle period of the idle figure (default 5)
          --hogs N        run N CPU-bound threads during every measurement (a busy host; default 0)
          --output FILE   also write the markdown report to FILE (e.g. idle.md, hogs2.md)
        """

    static func parse(_ arguments: [String]) -> Settings {
        var settings = Settings()
        var explicitReps: Int?
        var explicitIdle: Double?
        var rest = arguments[...]
        func value(_ flag: String) -> String {
            guard let value = rest.popFirst() else { fail("\(flag) needs a value") }
            return value
        }
        while let argument = rest.popFirst() {
            switch argument {
            case "--quick": settings.quick = true
            case "--reps": explicitReps = required(Int(value(argument)).flatMap { $0 > 0 ? $0 : nil }, "--reps takes a positive number")
            case "--only": settings.only += value(argument).split(separator: ",").map { $0.lowercased() }
            case "--cpu": settings.pinnedCPU = required(Int32(value(argument)), "--cpu takes a CPU number")
            case "--idle": explicitIdle = required(Double(value(argument)), "--idle takes seconds")
            case "--hogs": settings.hogs = required(Int(value(argument)).flatMap { $0 >= 0 ? $0 : nil }, "--hogs takes a count")
            case "--output": settings.outputPath = value(argument)
            case "--help", "-h": print(usage); exit(0)
            default: fail("unknown argument \(argument)")
            }
        }
        settings.repetitions = explicitReps ?? (settings.quick ? 2 : 5)
        settings.idleSeconds = explicitIdle ?? (settings.quick ? 0.5 : 5)
        return settings
    }

    private static func required<T>(_ value: T?, _ message: String) -> T {
        guard let value else { fail(message) }
        return value
    }

    private static func fail(_ message: String) -> Never {
        printToStandardError("longthread-bench: \(message)\n\(usage)")
        exit(2)
    }
}
