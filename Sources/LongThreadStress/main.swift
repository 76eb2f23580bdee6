// longthread-stress: stop-and-teardown stress for LongThread. See Options (or --help).
import Foundation
import LongThreads

// Bad usage: the message on standard error, exit status 64. --help, --version and --list exit 0.
let options = Options.parseOrExit()

func log(_ line: String) { FileHandle.standardError.write(Data((line + "\n").utf8)) }

var rng = SeededGenerator(seed: options.seed)
let watchdog = Watchdog(timeout: options.hangTimeout, seed: options.seed)
log("longthread-stress: seed \(options.seed), scenario \(options.scenario?.rawValue ?? "mixed"), "
    + "up to \(options.cycles) cycles\(options.duration.map { " or \($0)" } ?? ""), \(options.producers) producers"
    + (options.parallel > 1 ? ", \(options.parallel) cycles at once" : ""))

// Warm-up: Foundation and CF create process-wide state (and threads) once; the census starts after.
for _ in 0..<3 { _ = try runCycle(.stopRacingProducers, choices: CycleChoices(using: &rng), producers: 1, hangTimeout: options.hangTimeout) }
let threadsBefore = Census.threads
let descriptorsBefore = Census.descriptors
let memoryBefore = Census.trimmedMemory

/// What the runners have done so far; each runner adds its cycles here.
struct RunTally {
    var total = CycleResult()
    var cycles = 0
    var byScenario: [Scenario: Int] = [:]
    var lastProgress = ContinuousClock.now
}
/// A value behind an `NSLock`: a pthread mutex, which ThreadSanitizer sees (it cannot see
/// `Synchronization.Mutex` on Linux, and reported every access it guards as a race).
final class Guarded<Value>: @unchecked Sendable {
    private let lock = NSLock()
    // Guarded by `lock`.
    private var value: Value
    init(_ value: Value) { self.value = value }
    func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
let tally = Guarded(RunTally())
let started = ContinuousClock.now

/// Takes the next cycle's number, or nil once the run has done enough.
func nextCycle(_ claimed: inout Int) -> Int? {
    if let duration = options.duration, ContinuousClock.now - started >= duration { return nil }
    guard claimed < options.cycles else { return nil }
    defer { claimed += 1 }
    return claimed
}
let claims = Guarded(0)

/// One runner: cycles one after another, with random choices of its own. Runner 0 draws from the
/// warm-up's generator, so a run with one runner replays exactly from its seed.
func runCycles(runner: Int, rng: inout SeededGenerator) throws {
    while let cycle = claims.withLock({ nextCycle(&$0) }) {
        let scenario = options.scenario ?? Scenario.random(using: &rng)
        let choices = CycleChoices(using: &rng)
        if options.printPlan { print("cycle \(cycle): \(scenario.rawValue) \(choices.pending) items=\(choices.items)") }
        watchdog.begin(runner: runner, "cycle \(cycle) (\(scenario.rawValue))")
        let result = try runCycle(scenario, choices: choices, producers: options.producers, hangTimeout: options.hangTimeout)
        watchdog.end(runner: runner)
        for problem in result.problems.prefix(3) { log("cycle \(cycle) (\(scenario.rawValue)): \(problem)") }
        tally.withLock { tally in
            tally.cycles += 1
            tally.byScenario[scenario, default: 0] += 1
            tally.total.accepted += result.accepted
            tally.total.tasksRun += result.tasksRun
            tally.total.discarded += result.discarded
            tally.total.waitersToldDiscarded += result.waitersToldDiscarded
            tally.total.refused += result.refused
            tally.total.lost += result.lost
            tally.total.problems += result.problems
            tally.total.stalls += result.stalls
            if !options.quiet, ContinuousClock.now - tally.lastProgress >= .seconds(1) {
                tally.lastProgress = .now
                let total = tally.total
                log("  \(tally.cycles) cycles, \(total.accepted) accepted, \(total.tasksRun) run, \(total.discarded) discarded, "
                    + "lost \(total.lost), rss \(Census.memory.rss) KiB")
            }
        }
    }
}

// Runners beyond the first get threads of their own (joined before the census below) and
// generators seeded apart from the first's.
let extraRunners = (1..<options.parallel).map { runner in
    spawn {
        var own = SeededGenerator(seed: options.seed &+ UInt64(runner) &* 0xD1B5_4A32_D192_ED03)
        do { try runCycles(runner: runner, rng: &own) } catch { fatalError("runner \(runner): \(error)") }
    }
}
try runCycles(runner: 0, rng: &rng)
join(extraRunners)
var (total, cycles, byScenario) = tally.withLock { ($0.total, $0.cycles, $0.byScenario) }
// Stalls that run on the CPU are interrupted for their stacks: reports without one mean the
// capture signals went unexercised (stalls asleep in the kernel get no signal).
if total.stalls.reports > 0, total.stalls.withStack == 0 {
    let problem = "\(total.stalls.reports) stall reports, none with a stack: no stack capture signal was exercised"
    log(problem)
    total.problems.append(problem)
}

// Threads that detached themselves (last reference dropped on the thread) end a moment later, and
// the kernel reaps a joined thread's /proc entry a moment after pthread_join: let the counts settle.
let settleDeadline = ContinuousClock.now + .seconds(5)
while (Census.threads != threadsBefore || Census.descriptors != descriptorsBefore), ContinuousClock.now < settleDeadline {
    usleep(1000)
}
let threadsLeaked = Census.threads - threadsBefore
let descriptorsLeaked = Census.descriptors - descriptorsBefore
let memoryAfter = Census.trimmedMemory
let elapsed = ContinuousClock.now - started

print("""
longthread-stress summary (seed \(options.seed), \(elapsed))
  cycles                 \(cycles)   \(byScenario.sorted { $0.key.rawValue < $1.key.rawValue }.map { "\($0.key.rawValue) \($0.value)" }.joined(separator: ", "))
  tasks accepted         \(total.accepted)
  tasks run              \(total.tasksRun)
  tasks discarded        \(total.discarded) (waiters told: \(total.waitersToldDiscarded))
  posts refused          \(total.refused)
  tasks lost             \(total.lost)
  problems               \(total.problems.count)
  stall reports          \(total.stalls.reports) (stacks captured \(total.stalls.withStack), asleep in the kernel \(total.stalls.inKernel))
  hangs                  0
  threads leaked         \(threadsLeaked)
  descriptors leaked     \(descriptorsLeaked)
  peak RSS               \(memoryAfter.peak) KiB
  RSS drift              \(memoryAfter.rss - memoryBefore.rss) KiB (\(memoryBefore.rss) -> \(memoryAfter.rss) KiB, after malloc_trim)
""")
let clean = total.lost == 0 && total.problems.isEmpty && threadsLeaked == 0 && descriptorsLeaked == 0
print(clean ? "result: clean" : "result: FAILED")
exit(clean ? 0 : 1)
