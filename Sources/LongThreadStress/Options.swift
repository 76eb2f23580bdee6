import Foundation

/// Command-line options. Plain parsing: the tool, like the core, depends on the toolchain only.
struct Options {
    var cycles = 1_000
    var producers = 3
    var duration: Duration?
    var scenario: Scenario?          // nil: mixed
    var seed: UInt64 = UInt64(UInt32.random(in: 1...UInt32.max))
    var hangTimeout: Duration = .seconds(10)
    var quiet = false
    var printPlan = false

    static let usage = """
    usage: longthread-stress [--cycles N] [--producers P] [--duration SECONDS] [--scenario NAME|mixed]
                             [--seed S] [--hang-timeout SECONDS] [--quiet] [--print-plan] [--list]
      Runs stop-and-teardown scenarios against LongThread and checks that no work is lost, nothing
      hangs, and no thread or file descriptor leaks. Stops after N cycles or SECONDS, whichever first.
      --seed replays a run's random choices exactly; --print-plan prints the scenario of each cycle.
      Exit status: 0 clean, 1 lost work or leaks, 2 a hang, 64 bad usage.
    """

    static func parse(_ arguments: [String]) throws(UsageError) -> Options {
        var options = Options()
        var rest = arguments[...]
        func value(_ flag: String) throws(UsageError) -> String {
            guard let value = rest.popFirst() else { throw UsageError("\(flag) needs a value") }
            return value
        }
        func number<T: FixedWidthInteger>(_ flag: String) throws(UsageError) -> T {
            let text = try value(flag)
            guard let number = T(text), number >= 0 else { throw UsageError("\(flag): not a number: \(text)") }
            return number
        }
        while let flag = rest.popFirst() {
            switch flag {
            case "--cycles": options.cycles = try number(flag)
            case "--producers": options.producers = max(1, try number(flag))
            case "--duration": options.duration = .seconds(try number(flag) as Int)
            case "--seed": options.seed = try number(flag)
            case "--hang-timeout": options.hangTimeout = .seconds(max(1, try number(flag) as Int))
            case "--quiet": options.quiet = true
            case "--print-plan": options.printPlan = true
            case "--scenario":
                let name = try value(flag)
                if name == "mixed" { options.scenario = nil; continue }
                guard let scenario = Scenario(rawValue: name) else {
                    throw UsageError("unknown scenario \(name); --list shows them")
                }
                options.scenario = scenario
            case "--list":
                throw UsageError(Scenario.allCases.map { "\($0.rawValue): \($0.summary)" }.joined(separator: "\n"), isList: true)
            case "--help", "-h":
                throw UsageError(usage, isList: true)
            default:
                throw UsageError("unknown option \(flag)\n\(usage)")
            }
        }
        return options
    }
}

struct UsageError: Error {
    let message: String
    let isList: Bool
    init(_ message: String, isList: Bool = false) {
        self.message = message
        self.isList = isList
    }
}

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
