// A harness for instruction counts of the async post path (issue 14), run under callgrind:
// one producer (the main thread) posts N fire-and-forget empty closures to one LongThread, in
// bursts of 1,000, each followed by an item that signals a semaphore the producer waits on (so the
// queue's arrays stay at one size, how far the producer runs ahead of the loop under valgrind's
// scheduler moves nothing, and no waiter spins: `sync`'s waiter may spin, and how long depends on
// the machine's load). Two runs
// that differ only in N cancel every fixed cost, so (I(2N) - I(N)) / N is what one item costs,
// posted and run, on both threads (a thousandth of a burst's end included).
//
//   longthread-postcost perform N   (default)
//   longthread-postcost submit N    (the same through `submit`, which returns a handle)
//
// It builds against the library of whichever checkout it sits in, so the same file measures an
// older commit too (copy it there with its Package.swift entry, without `submit` if that commit
// has none). Nothing in it is timed.
import Dispatch
import LongThreads

let arguments = CommandLine.arguments.dropFirst()
let kind = arguments.first ?? "perform"
let count = arguments.dropFirst().first.flatMap { Int($0) } ?? 100_000
let burst = 1_000
let burstDone = DispatchSemaphore(value: 0)

let thread = try LongThread(name: "postcost")
try thread.sync {} // the loop runs and its first batch has been taken
for _ in 0..<(count / burst) {
    switch kind {
    case "perform":
        for _ in 0..<burst { try thread.perform {} }
    case "submit":
        for _ in 0..<burst { _ = try thread.submit {} }
    default:
        fatalError("unknown kind \(kind): perform or submit")
    }
    try thread.perform { burstDone.signal() }
    burstDone.wait()
}
thread.stop()
