// longthread-stress: stop-and-teardown stress for LongThread. See Options (or --help).
import Foundation
import LongThreads

// Bad usage: the message on standard error, exit status 64. --help, --version and --list exit 0.
let options = Options.parseOrExit()

func log(_ line: String) { FileHandle.standardError.write(Data((line + "\n").utf8)) }

var rng = SeededGenerator(seed: options.seed)
let watchdog = Watchdog(timeout: options.hangTimeout, seed: options.seed)
log("longthread-stress: seed \(options.seed), scenario \(options.scenario?.rawValue ?? "mixed"), "
    + "up to \(options.cycles) cycles\(options.duration.map { " or \($0)" } ?? ""), \(options.producers) producers")

// Warm-up: Foundation and CF create process-wide state (and threads) once; the census starts after.
for _ in 0..<3 { _ = try runCycle(.stopRacingProducers, choices: CycleChoices(using: &rng), producers: 1, hangTimeout: options.hangTimeout) }
let threadsBefore = Census.threads
let descriptorsBefore = Census.descriptors
let memoryBefore = Census.memory

var total = CycleResult()
var cycles = 0
var byScenario: [Scenario: Int] = [:]
let started = ContinuousClock.now
var lastProgress = started
while cycles < options.cycles {
    if let duration = options.duration, ContinuousClock.now - started >= duration { break }
    let scenario = options.scenario ?? Scenario.random(using: &rng)
    let choices = CycleChoices(using: &rng)
    if options.printPlan { print("cycle \(cycles): \(scenario.rawValue) \(choices.pending) items=\(choices.items)") }
    watchdog.begin("cycle \(cycles) (\(scenario.rawValue))")
    let result = try runCycle(scenario, choices: choices, producers: options.producers, hangTimeout: options.hangTimeout)
    watchdog.end()
    cycles += 1
    byScenario[scenario, default: 0] += 1
    total.accepted += result.accepted
    total.tasksRun += result.tasksRun
    total.discarded += result.discarded
    total.waitersToldDiscarded += result.waitersToldDiscarded
    total.refused += result.refused
    total.lost += result.lost
    for problem in result.problems.prefix(3) { log("cycle \(cycles - 1) (\(scenario.rawValue)): \(problem)") }
    total.problems += result.problems
    if !options.quiet, ContinuousClock.now - lastProgress >= .seconds(1) {
        lastProgress = .now
        log("  \(cycles) cycles, \(total.accepted) accepted, \(total.tasksRun) run, \(total.discarded) discarded, "
            + "lost \(total.lost), rss \(Census.memory.rss) KiB")
    }
}

// Threads that detached themselves (last reference dropped on the thread) end a moment later, and
// the kernel reaps a joined thread's /proc entry a moment after pthread_join: let the counts settle.
let settleDeadline = ContinuousClock.now + .seconds(5)
while (Census.threads != threadsBefore || Census.descriptors != descriptorsBefore), ContinuousClock.now < settleDeadline {
    usleep(1000)
}
let threadsLeaked = Census.threads - threadsBefore
let descriptorsLeaked = Census.descriptors - descriptorsBefore
let memoryAfter = Census.memory
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
  hangs                  0
  threads leaked         \(threadsLeaked)
  descriptors leaked     \(descriptorsLeaked)
  peak RSS               \(memoryAfter.peak) KiB
  RSS drift              \(memoryAfter.rss - memoryBefore.rss) KiB (\(memoryBefore.rss) -> \(memoryAfter.rss) KiB)
""")
let clean = total.lost == 0 && total.problems.isEmpty && threadsLeaked == 0 && descriptorsLeaked == 0
print(clean ? "result: clean" : "result: FAILED")
exit(clean ? 0 : 1)
