import Benchmark
import Dispatch
import Glibc
import LongThreads
import Synchronization

/// What the suite measures, and which of it CI checks.
///
/// Every benchmark measures the same counts; each checks those of them that repeat run after run
/// on this VM, and shows the rest. Hardware instruction counters are not available on every VM
/// (`perf stat -e instructions true` says "not supported" on this project's), so the checked counts
/// are allocations (the MallocInterposer trait), read- and write-class system calls
/// (`/proc/self/io`: an eventfd wake-up is a write, a `/proc` sample a read) and, where they repeat,
/// voluntary context switches (a thread blocked). Wall time and CPU time drift with the VM and its
/// neighbours: shown, never checked.
enum Metrics {
    static let measured: [BenchmarkMetric] = [.mallocCountTotal, .readSyscalls, .writeSyscalls, voluntarySwitches,
                                              .wallClock, .cpuTotal]

    /// `getrusage`'s voluntary switches of the whole process (package-benchmark has no context
    /// switch count on Linux).
    static let voluntarySwitches = BenchmarkMetric.custom("voluntaryContextSwitches", polarity: .prefersSmaller,
                                                          useScalingFactor: false)

    /// A count that repeats within a few percent: a 10% regression fails, 5% does not.
    static var exact: BenchmarkThresholds { .init(relative: [.p90: 5.0]) }
    /// A paced row's allocations: how many of the loop's waits end in a pass of CF's (which
    /// allocates) rather than a park depends on timing, and moved them 6-9% between runs of one
    /// build on this VM while it was busy. 15%: an allocation more per round trip (+14-20%) fails.
    static var paced: BenchmarkThresholds { .init(relative: [.p90: 15.0]) }
    /// A small count (tens) that moves by a few from run to run: `calls` more fails.
    static func few(_ calls: Int) -> BenchmarkThresholds { .init(absolute: [.p90: calls]) }
    /// Shown, never failing: a tolerance no run exceeds (package-benchmark checks every metric a
    /// threshold file names, strictly where no tolerance is given).
    static var shown: BenchmarkThresholds { .init(relative: [.p90: 1_000_000], absolute: [.p90: Int.max / 4]) }

    /// The suite's configuration checking `checked`; every other measured metric is shown.
    static func configuration(checking checked: [BenchmarkMetric: BenchmarkThresholds],
                              measuring metrics: [BenchmarkMetric] = measured) -> Benchmark.Configuration {
        var thresholds = checked
        for metric in metrics where thresholds[metric] == nil { thresholds[metric] = shown }
        return .init(metrics: metrics, warmupIterations: 3, scalingFactor: .one, maxDuration: .seconds(2),
                     maxIterations: 40, thresholds: thresholds)
    }
}

/// A LongThread made in a benchmark's setup and stopped in its teardown, so that neither is
/// measured; and a semaphore for items that signal back.
final class Fixture: Sendable {
    private let current = Mutex<LongThread?>(nil)
    let done = DispatchSemaphore(value: 0)

    var thread: LongThread {
        guard let thread = current.withLock({ $0 }) else { fatalError("the benchmark's setup did not run") }
        return thread
    }

    func start() {
        guard let thread = try? LongThread(name: "regression") else { fatalError("cannot start a LongThread") }
        try? thread.sync {}
        current.withLock { $0 = thread }
    }

    func stop() {
        let thread = current.withLock { current in
            defer { current = nil }
            return current
        }
        thread?.stop()
    }
}

/// The caller's pace between paced requests.
enum Pacing {
    /// Computes (reads the clock, a vDSO call: no system call) until `microseconds` have passed.
    static func compute(microseconds: Int) {
        let end = now() + Int64(microseconds) * 1_000
        while now() < end {}
    }

    /// Sleeps `microseconds` (plus the thread's timer slack, 50 µs by default: prctl is variadic
    /// in C, out of Swift's reach, so the slack is left as it is).
    static func sleep(microseconds: Int) {
        var request = timespec(tv_sec: 0, tv_nsec: microseconds * 1_000)
        var remaining = timespec()
        while nanosleep(&request, &remaining) == -1, errno == EINTR { request = remaining }
    }

    private static func now() -> Int64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return Int64(time.tv_sec) * 1_000_000_000 + Int64(time.tv_nsec)
    }
}

/// A benchmark's body with the process's voluntary context switches counted around it.
func countingSwitches(_ body: @escaping (Benchmark) -> Void) -> (Benchmark) -> Void {
    { benchmark in
        let before = voluntarySwitches()
        body(benchmark)
        benchmark.measurement(Metrics.voluntarySwitches, voluntarySwitches() - before)
    }
}

private func voluntarySwitches() -> Int {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    return usage.ru_nvcsw
}
