import CBenchSupport
import Glibc

// longthread-bench: every contender of issue 7, side by side, in one table.

let contenders: [any Contender.Type] = [
    LongThreadContender.self, FoundationThreadPeer.self, CFSource0Peer.self, DispatchPeer.self,
    NIOPeer.self, CondvarPeer.self, FutexFloor.self, PthreadCreateFloor.self,
]

// Names are read with closures, not `\.name`: a key path through an existential metatype crashes
// the Swift 6.3.1 compiler (SILGen).
// Bad usage: the message on standard error, exit status 64; --help and --version exit 0.
let command = BenchCommand.parseOrExit()
// LongThread-alone tables, each run unless --only names other figures only.
let sections = ["scaling", "propagation"]
func sectionRuns(_ section: String) -> Bool {
    command.settings.only.isEmpty || command.settings.only.contains { section.contains($0) }
}
if command.list {
    print("contenders: " + contenders.map { $0.name }.joined(separator: ", "))
    let keys = Figures.all(Settings()).map(\.key) + WholeCost.keys + sections
    print("figures: " + Set(keys).sorted().joined(separator: ", "))
    exit(0)
}
let settings = command.settings
let allFigures = Figures.all(settings) + WholeCost.figures(settings) + [QuotaPass.figure]

// --only: each name selects contenders and/or figures; LongThread stays, every ratio needs it.
func selected<T>(_ items: [T], _ name: (T) -> String) -> [T] {
    let picked = items.filter { item in settings.only.contains { name(item).lowercased().contains($0) } }
    return picked.isEmpty ? items : picked
}
for name in settings.only where !contenders.contains(where: { $0.name.lowercased().contains(name) })
    && !allFigures.contains(where: { $0.key.contains(name) }) && !sections.contains(where: { $0.contains(name) }) {
    printToStandardError("longthread-bench: --only \(name) names no contender and no figure (see --list)")
    exit(64)
}
var chosenContenders = selected(contenders) { $0.name }
if !chosenContenders.contains(where: { $0 == LongThreadContender.self }) {
    chosenContenders.insert(LongThreadContender.self, at: 0)
}
// `--only scaling` (or propagation) alone runs that table and no contender figure.
let onlySections = !settings.only.isEmpty && settings.only.allSatisfy { name in sections.contains { $0.contains(name) } }
let chosenFigures = onlySections ? [] : selected(allFigures) { $0.key }
// The whole-cost figures (issue 29) have a table of their own; the quota pass runs in its group.
let mainFigures = chosenFigures.filter { !WholeCost.keys.contains($0.key) }
let wholeCostFigures = chosenFigures.filter { WholeCost.keys.contains($0.key) && $0.key != QuotaPass.figure.key }
let runsQuota = chosenFigures.contains { $0.key == QuotaPass.figure.key }

// The allocation figure is only as good as the counter: check that a library's malloc (here the
// Swift runtime's, allocating a string) goes through this executable's counting malloc.
let countedBefore = bench_alloc_count()
bench_alloc_counting(1)
let probe = ProcFS.read("/proc/self/statm")
bench_alloc_counting(0)
precondition(bench_alloc_count() > countedBefore && probe != nil, "the malloc counter is not interposed")

let machine = Machine.description(hogs: settings.hogs)
let loadAtStart = Machine.loadOneMinute()
machine.forEach { Runner.progress($0) }
Hogs.start(settings.hogs)
let results = Runner.run(mainFigures, chosenContenders, settings)
let wholeCost = Runner.run(wholeCostFigures, chosenContenders, settings)
let quota = runsQuota ? QuotaPass.run(chosenContenders, settings) : nil
let scaling = sectionRuns("scaling") ? Scaling.run(settings) : []
if sectionRuns("propagation") { Runner.progress("context propagation") }
let propagation = sectionRuns("propagation") ? [Propagation.run(settings)] : []
let loadAtEnd = Machine.loadAverage()
let loadOneMinuteAtEnd = Machine.loadOneMinute()
let busiestAtEnd = Machine.busiestProcesses()
Hogs.stop()

var report = ""
@MainActor func emit(_ line: String) { report += line + "\n" }
let condition = settings.hogs == 0 ? "idle (no hogs)" : "\(settings.hogs) CPU hogs"
emit("## longthread-bench, \(condition)\(settings.quick ? " (--quick)" : "")\n")
emit(machine.map { "- \($0)" }.joined(separator: "\n"))
// RESULTS.md gives the machine in its conditions: the rest of the report follows them.
let machineLines = report.count
emit("- Repetitions: \(settings.repetitions) per figure, interleaved in a new random order each (seeded), a fresh worker each; "
      + "async: \(settings.asyncItems.formatted) no-op closures per run; round trips: "
      + "\(settings.roundTrips.formatted) per repetition in \(settings.roundTripBatches) turns per contender, "
      + "pooled for percentiles; lives taken in turns (a new random order each round); idle period: "
      + "\(settings.idleSeconds) s; \(settings.idleWorkers) idle workers for memory\n")
if !results.isEmpty { emit(Report.table(results, chosenContenders)) }
emit("\nLoad average at the end: \(loadAtEnd) (1, 5, 15 min; runnable/total threads).")
if !results.isEmpty { emit("\nA peer's cell reads `value (r×)`: r is how many times better LongThread is than that peer on "
      + "the row (throughput: LongThread ÷ peer; times, counts and sizes: peer ÷ LongThread); r > 1 "
      + "means LongThread leads. Single values are medians over repetitions; percentiles pool all "
      + "round trips. n/a: the contender cannot do that (see Benchmarks/README.md).\n") }
let bars = Report.bars(results, hogs: settings.hogs)
if !bars.isEmpty {
    emit("### Bars of issues 7 and 12\n")
    emit(bars.joined(separator: "\n"))
}
if !wholeCost.isEmpty || quota != nil {
    emit(WholeCost.preamble(settings))
    emit(WholeCostReport.table(wholeCost + (quota?.results ?? []), chosenContenders))
    if let quota { emit("\nQuota pass: \(quota.note)") }
}
if !scaling.isEmpty {
    emit("\n### Cost as work grows (LongThread alone)\n")
    emit(Scaling.markdown(scaling))
}
if !propagation.isEmpty {
    emit("\n### What carrying trace context costs a post (LongThread alone, LongThreadsTracing)\n")
    emit(Scaling.markdown(propagation))
}
print(report, terminator: "")
if let path = settings.outputPath {
    guard let file = fopen(path, "w") else {
        printToStandardError("longthread-bench: cannot write \(path)")
        exit(1)
    }
    fputs(report, file)
    fclose(file)
}
if let path = Results.destination(settings) {
    let title = "## \(condition)\(settings.quick ? " (--quick)" : "")\n\n"
    let document = Results.document(report: title + String(report.dropFirst(machineLines)), settings: settings, machine: machine, loadAtEnd: loadAtEnd,
                                    busiestAtEnd: busiestAtEnd, loadOneMinute: (loadAtStart, loadOneMinuteAtEnd))
    if let failure = Results.write(document, to: path) {
        printToStandardError("longthread-bench: \(failure)")
        exit(1)
    }
    Runner.progress("results written to \(path)")
}
