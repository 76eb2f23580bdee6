// The regression suite: what one LongThread operation costs, in what does not drift with the VM's
// speed or its neighbours, checked by CI against Benchmarks/Thresholds (see Benchmarks/README.md,
// "Regression suite"). The side-by-side comparison with Dispatch, NIO, CF and a condvar queue
// stays in longthread-bench; this suite compares LongThread with its own past.
//
// Each benchmark runs a fixed number of operations per iteration (its name ends with how many:
// "x1000"), so a count per iteration divided by that number is a count per operation. Names are
// ASCII: they name the threshold files.
import Benchmark
import Dispatch
import Glibc
import LongThreads

let benchmarks: @Sendable () -> Void = {
    postedItems()
    roundTrips()
    threadLife()
    boundValueCalls()
    timers()
}

/// 1,000 fire-and-forget items, then one that signals a semaphore the caller waits on (no spin, so
/// the count depends on the post path alone, not on how long a waiter spun).
func postedItems() {
    let fixture = Fixture()
    // Posting allocates nothing per item (a closure capturing nothing): the count is the loop's
    // own (tens), moving by a few with how often the queue's arrays swap.
    let checked = [BenchmarkMetric.mallocCountTotal: Metrics.few(10)]
    Benchmark("post.x1000", configuration: Metrics.configuration(checking: checked), closure: countingSwitches { _ in
        let thread = fixture.thread
        for _ in 0..<1_000 { try? thread.perform {} }
        let done = fixture.done
        try? thread.perform { done.signal() }
        done.wait()
    }, setup: { fixture.start() }, teardown: { fixture.stop() })
}

/// `sync {}` back to back, and paced: the caller computes 20 µs, 100 µs or 1 ms before each
/// request, or sleeps 1 ms (the whole-cost benchmark's paced rows), so the loop's linger, park and
/// the wait policy's load signal all run.
func roundTrips() {
    let backToBack = Fixture()
    Benchmark("sync.back-to-back.x1000", configuration: Metrics.configuration(checking: [.mallocCountTotal: Metrics.exact]),
              closure: countingSwitches { _ in
        let thread = backToBack.thread
        for _ in 0..<1_000 { try? thread.sync {} }
    }, setup: { backToBack.start() }, teardown: { backToBack.stop() })

    for (gap, sleeping) in [(20, false), (100, false), (1_000, false), (1_000, true)] {
        let fixture = Fixture()
        let count = gap >= 1_000 ? 50 : 200
        let name = "sync.\(sleeping ? "sleeping" : "computing")-\(gap)us.x\(count)"
        Benchmark(name, configuration: Metrics.configuration(checking: [.mallocCountTotal: Metrics.paced]), closure: countingSwitches { _ in
            let thread = fixture.thread
            for _ in 0..<count {
                if sleeping { Pacing.sleep(microseconds: gap) } else { Pacing.compute(microseconds: gap) }
                try? thread.sync {}
            }
        }, setup: { fixture.start() }, teardown: { fixture.stop() })
    }
}

/// A thread's whole life: create, one `sync`, stop (which joins). Without the allocation count:
/// with package-benchmark's malloc counter on, a thread's end crashes in CF's run-loop finalizer
/// (SIGSEGV in swift_dynamicCastClassUnconditional under __CFFinalizeRunLoop, every run; never
/// without the counter, nor under the interposer alone in longthread-postcost). A life's
/// allocations are longthread-bench's "Allocations" rows.
/// Nothing checked, all shown: a life's wake-up writes, reads and context switches depend on
/// whether each post finds the new thread asleep (scheduling, not code). Ten lives' writes
/// measured p50 21–29 and p90 22–30 over five runs of one build, idle; only the minimum (20: two
/// a life) held still, and package-benchmark's threshold files hold p90 alone.
func threadLife() {
    let configuration = Metrics.configuration(checking: [:],
                                              measuring: Metrics.measured.filter { $0 != .mallocCountTotal })
    Benchmark("thread-life.x10", configuration: configuration, closure: countingSwitches { _ in
        for _ in 0..<10 {
            guard let thread = try? LongThread(name: "life") else { continue }
            try? thread.sync {}
            thread.stop()
        }
    })
}

/// `ThreadBound.sync`, back to back, on a value bound to a thread of its own.
func boundValueCalls() {
    let fixture = Fixture()
    nonisolated(unsafe) var bound: ThreadBound<Int>?
    Benchmark("ThreadBound.sync.x1000", configuration: Metrics.configuration(checking: [.mallocCountTotal: Metrics.exact]),
              closure: countingSwitches { _ in
        guard let value = bound else { return }
        for _ in 0..<1_000 { _ = try? value.sync { $0 += 1 } }
    }, setup: {
        fixture.start()
        bound = try await ThreadBound(on: fixture.thread) { 0 }
    }, teardown: {
        bound = nil
        fixture.stop()
    })
}

/// A one-shot timer 10 µs out, waited for: scheduled, fired by CF's timer, run.
func timers() {
    let fixture = Fixture()
    // Each fire wakes the loop through CF's timer descriptor: one write, two reads, exactly.
    let checked: [BenchmarkMetric: BenchmarkThresholds] = [
        .mallocCountTotal: Metrics.exact, .readSyscalls: Metrics.exact, .writeSyscalls: Metrics.exact,
    ]
    Benchmark("timer.fire.x100", configuration: Metrics.configuration(checking: checked), closure: countingSwitches { _ in
        let thread = fixture.thread
        let done = fixture.done
        for _ in 0..<100 {
            _ = try? thread.perform(after: .microseconds(10)) { done.signal() }
            done.wait()
        }
    }, setup: { fixture.start() }, teardown: { fixture.stop() })
}
