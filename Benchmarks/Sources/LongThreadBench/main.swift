import CBenchSupport
import Glibc

// longthread-bench: every way of getting work onto another thread, side by side, in one table.

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
// The whole-cost figures have a table of their own; the quota pass runs in its group.
let mainFigures = chosenFigures.filter { !WholeCost.keys.contains($0.key) }
let wholeCostFigures = chosenFigures.filter { WholeCost.keys.contains($0.key) && $0.key != QuotaPass.figure.key }
let runsQuota = chosenFigures.contains { $0.key == QuotaPass.figure.key }

// The allocation figure is only as good as the counter: check that a library's malloc (here the
// Swift runtime's, allocating a string) goes through this executable's counting malloc.
let countedBefore = bench_alloc_count()
bench_alloc_counting(1)
let probe = ProcFS.read("/proc/self/statm")
bench_alloc_counting(0)
precondition(bench_alloc_count() > countedBefore && probe != nil,
             "the malloc counter is not interposed (a sanitizer build has its own malloc: run the benchmark without one)")

let machine = Machine.description(hogs: settings.hogConditions)
let otherWorkAtStart = OtherWork.sample()
machine.forEach { Runner.progress($0) }
// Each condition (`--hogs 0,2`: idle, then 2 hogs) measures every chosen figure in turn.
let measured = settings.hogConditions.map { hogs in
    var conditionSettings = settings
    conditionSettings.hogs = hogs
    let run = ConditionRun(settings: conditionSettings, contenders: chosenContenders, mainFigures: mainFigures,
                           wholeCostFigures: wholeCostFigures, runsQuota: runsQuota,
                           runsScaling: sectionRuns("scaling"), runsPropagation: sectionRuns("propagation"))
    let (body, loadAtEnd) = run.measure()
    return (title: run.condition + (settings.quick ? " (--quick)" : ""), body: body, loadAtEnd: loadAtEnd)
}
let otherCPUs = OtherWork.averageCPUs(from: otherWorkAtStart, to: OtherWork.sample())
let busiestAtEnd = Machine.busiestProcesses()

// Standard output (and --output): each condition's report under its title and the machine.
let machineList = machine.map { "- \($0)" }.joined(separator: "\n") + "\n"
let report = measured.map { "## longthread-bench, \($0.title)\n\n" + machineList + $0.body }.joined(separator: "\n")
print(report, terminator: "")
if let path = settings.outputPath {
    guard let file = fopen(path, "w") else {
        printToStandardError("longthread-bench: cannot write \(path)")
        exit(1)
    }
    fputs(report, file)
    fclose(file)
}
// RESULTS.md: the machine once, in the conditions, then each condition's tables.
if let path = Results.destination(settings) {
    let document = Results.document(report: measured.map { "## \($0.title)\n\n" + $0.body }.joined(separator: "\n"),
                                    settings: settings, machine: machine, loadAtEnd: measured.last?.loadAtEnd ?? "",
                                    busiestAtEnd: busiestAtEnd, otherCPUs: otherCPUs)
    if let failure = Results.write(document, to: path) {
        printToStandardError("longthread-bench: \(failure)")
        exit(1)
    }
    Runner.progress("results written to \(path)")
}
