import CBenchSupport
import Glibc
import Testing

@testable import LongThreadBench

/// The suites that read the process's CPU clock or load the CPUs, one after another: a test that
/// counts every thread's CPU must not count another test's threads.
@Suite("Whole-cost harness", .serialized)
struct WholeCostHarnessTests {}

extension WholeCostHarnessTests {
@Suite("The paced caller")
struct PacerTests {
    @Test("A computing gap spends about its length of the caller's CPU")
    func computingGapHasItsLength() {
        let steps = Pacer.computeSteps(.computing(microseconds: 2_000))
        // Best of three: another process may take the CPU midway, which a thread clock does not
        // count but a cache refill after it does.
        let spent = (0..<3).map { _ in
            let start = threadCPUNanoseconds()
            Pacer.pause(.computing(microseconds: 2_000), steps: steps)
            return Double(threadCPUNanoseconds() - start) / 1e3
        }.min()!
        #expect((1_000...6_000).contains(spent), "2,000 µs of computing took \(spent) µs of CPU")
    }

    @Test("The caller's computing is taken out of the round trips' cost")
    func computingIsNotCharged() {
        var calls = 0
        let result = Pacer.run(count: 50, gap: .computing(microseconds: 1_000)) { calls += 1 }
        #expect(calls == 50)
        #expect(result.samples.count == 50)
        // A no-op round trip costs a few µs of harness; 1,000 µs or more would mean the gap
        // counted. (The total has room for other tests' threads: the test runner's own.)
        #expect(result.totalCPU < 500, "total CPU per no-op round trip: \(result.totalCPU) µs")
        #expect(result.callerCPU < 50, "caller CPU per no-op round trip: \(result.callerCPU) µs")
    }

    @Test("A sleeping gap sleeps at least its length, is not charged, and the timer slack comes back")
    func sleepingGap() {
        let slackBefore = bench_swap_timer_slack(50_000)
        defer { _ = bench_swap_timer_slack(UInt(max(slackBefore, 1))) }
        let start = nowNanoseconds()
        let result = Pacer.run(count: 50, gap: .sleeping(microseconds: 1_000)) {}
        let elapsed = Double(nowNanoseconds() - start) / 1e6
        #expect(elapsed >= 50, "50 gaps of 1 ms took \(elapsed) ms")
        #expect(result.samples.count == 50)
        #expect(result.callerCPU < 50, "caller CPU per no-op round trip: \(result.callerCPU) µs")
        #expect(bench_swap_timer_slack(50_000) == 50_000, "the caller's timer slack was not restored")
    }

    @Test("The whole cost counts the worker's CPU, not the caller's alone")
    func workerCPUCounts() throws {
        // A worker that computes 200 µs per round trip while the caller sleeps in its wait.
        let worker = CondvarPeer()
        defer { worker.stop(.drain) }
        let steps = Pacer.computeSteps(.computing(microseconds: 200))
        let result = try Pacer.run(count: 50, gap: .none) {
            try worker.runOnWorker { blackHole(bench_compute(steps)) }
        }
        #expect(result.totalCPU >= 100, "total CPU per round trip: \(result.totalCPU) µs")
        #expect(result.callerCPU < result.totalCPU / 2, "caller \(result.callerCPU) µs of \(result.totalCPU) µs")
    }
}

}

extension WholeCostHarnessTests {
@Suite("The neighbour process")
struct NeighbourTests {
    @Test("The spinner counts, and is gone after")
    func spinnerCountsAndEnds() {
        var child: pid_t = 0
        let steps = Neighbour.withSpinner { counter in
            Neighbour.window(counter, seconds: 0.05, load: nil).steps
        }
        #expect(steps > 0)
        // A spinner of our own, to check the kill reaps it.
        let counter = bench_shared_counter()!
        child = bench_spawn_spinner(counter)
        #expect(child > 0)
        #expect(bench_kill_spinner(child) == 0)
        #expect(kill(child, 0) == -1 && errno == ESRCH, "the neighbour \(child) is still there")
        munmap(counter, 8)
    }

    @Test("A share takes its loaded windows between alone ones, each a quarter of the time")
    func shareWindows() {
        let calls = Calls()
        let share = Neighbour.withSpinner { counter in
            Neighbour.share(counter, seconds: 0.08) { end in
                calls.deadlines.append(Double(end) - Double(nowNanoseconds()))
                sleepFor(seconds: (Double(end) - Double(nowNanoseconds())) / 1e9)
            }
        }
        #expect(calls.deadlines.count == 4)
        #expect(calls.deadlines.allSatisfy { $0 > 0 && $0 <= 20e6 }, "\(calls.deadlines)")
        #expect(share > 0)
    }

    final class Calls: @unchecked Sendable { var deadlines: [Double] = [] }
}
}
