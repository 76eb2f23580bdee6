// A harness for instruction counts under callgrind: the async post path and a thread's whole life.
// Nothing in it is timed. Two runs that differ only in N cancel every fixed cost, so
// (I(2N) - I(N)) / N is what one unit costs, on every thread.
//
//   longthread-postcost perform N      one item posted and run (default)
//   longthread-postcost perform-context N      the same with a context propagator installed that
//                                      captures a context (a shared reference) at every post
//   longthread-postcost perform-no-context N   the same with a propagator installed whose
//                                      capture finds no context (returns nil)
//   longthread-postcost submit N       the same through `submit`, which returns a handle
//   longthread-postcost lifecycle N    one LongThread's life: create + 1 sync task + stop + join
//   longthread-postcost cf-lifecycle N the same life of a raw CF source0 thread (`CFSource0Life`)
//   longthread-postcost wake N         one item posted to a sleeping loop, which wakes it, and its
//                                      reply (a semaphore): the round trip's cost without a spin
//   longthread-postcost paced N G      N `sync {}` from a caller that sleeps G µs (default 1000)
//                                      before each: the paced caller's cost, spins and load
//                                      samples included (a sleep costs no instructions)
//
// Posts: one producer (the main thread) posts N fire-and-forget empty closures to one LongThread,
// in bursts of 1,000, each followed by an item that signals a semaphore the producer waits on (so
// the queue's arrays stay at one size, how far the producer runs ahead of the loop under
// valgrind's scheduler moves nothing, and no waiter spins: `sync`'s waiter may spin, and how long
// depends on the machine's load).
//
// Lives: N lives one after another, each the benchmark's lifecycle figure (`longthread-bench
// --only lifecycle`) without its clock and harness, so the per-function inclusive costs of
// `callgrind_annotate` (difference of the two runs, divided by N) name what a life costs.
//
// It builds against the library of whichever checkout it sits in, so the same file measures an
// older commit too (copy it there with its Package.swift entry, without `submit` if that commit
// has none).
import Dispatch
import Glibc
import LongThreads

let arguments = CommandLine.arguments.dropFirst()
let kind = arguments.first ?? "perform"
let count = arguments.dropFirst().first.flatMap { Int($0) } ?? 100_000

switch kind {
case "perform", "submit":
    try posts(count, submit: kind == "submit")
case "perform-context", "perform-no-context":
    LongThread.contextPropagator = SharedContextPropagator(finds: kind == "perform-context")
    try posts(count, submit: false)
case "lifecycle":
    for _ in 0..<count {
        let thread = try LongThread(name: "life")
        try thread.sync {}
        thread.stop()
    }
case "wake":
    try wakes(count)
case "paced":
    let gap = arguments.dropFirst(2).first.flatMap { Int($0) } ?? 1_000
    let thread = try LongThread(name: "paced")
    try thread.sync {}
    for _ in 0..<count {
        var request = timespec(tv_sec: 0, tv_nsec: gap * 1_000)
        var remaining = timespec()
        while nanosleep(&request, &remaining) == -1, errno == EINTR { request = remaining }
        try thread.sync {}
    }
    thread.stop()
case "cf-lifecycle":
    for _ in 0..<count {
        let thread = CFSource0Life()
        thread.roundTrip()
        thread.stop()
    }
default:
    fatalError("unknown kind \(kind): perform, perform-context, perform-no-context, submit, wake, paced, lifecycle or cf-lifecycle")
}

func posts(_ count: Int, submit: Bool) throws {
    let burst = 1_000
    let burstDone = DispatchSemaphore(value: 0)
    let thread = try LongThread(name: "postcost")
    try thread.sync {} // the loop runs and its first batch has been taken
    for _ in 0..<(count / burst) {
        for _ in 0..<burst {
            if submit { _ = try thread.submit {} } else { try thread.perform {} }
        }
        try thread.perform { burstDone.signal() }
        burstDone.wait()
    }
    thread.stop()
}

func wakes(_ count: Int) throws {
    let replied = DispatchSemaphore(value: 0)
    let thread = try LongThread(name: "wakecost")
    try thread.sync {}
    for _ in 0..<count {
        try thread.perform { replied.signal() }
        replied.wait()
    }
    thread.stop()
}

/// A propagator as cheap as one can be, so the figures are the library's share of a captured
/// context: the capture call, the closure wrapping the work, and the restore call around it. The
/// context is one shared reference (a `ServiceContext` is a struct over shared storage): a
/// capture retains it and the item's end releases it.
struct SharedContextPropagator: ContextPropagator {
    final class Context: Sendable {}
    static let context = Context()
    let finds: Bool

    func capture(label: String?) -> (any Sendable)? { finds ? Self.context : nil }

    func restore<Result>(_ captured: any Sendable, label: String?, around work: () throws -> Result) rethrows -> Result {
        try work()
    }
}
