import CLongThreadsShims
import Foundation
@testable import LongThreads
import Testing

/// What a wait's decision costs the thread that makes it: the load signal a spin or a linger is
/// decided by is a /proc read (about 12 µs of CPU), so it is paid for by many decisions, not by
/// each request; and a caller's spin for a reply that needs the loop woken lasts no longer than
/// sleeping would have cost it (`WaitPolicy`, "The load signal" and "Paying for itself").
@Suite("What a wait's decision costs")
struct WaitCostTests {
    /// The machine's rules, the load sampled (not forced).
    static let sampled = WaitPolicy.machine

    @Test("a caller a millisecond apart samples the load once per many decisions, not every few milliseconds")
    func loadSampledOncePerManyDecisions() {
        defer { WaitLearning.resetCurrent() }
        WaitLearning.resetCurrent()
        let policy = Self.sampled
        let learning = WaitLearning.current
        let decisions = 4 * Int(policy.loadSampleDecisions)
        // Each decision a scheduler tick and a millisecond after the last, as a caller that
        // computes between requests: every one is past the sample's age.
        let step = policy.loadSampleInterval + 1_000_000
        var now = Int64(CLongThreadsShims_monotonicNanoseconds())
        var samples = 0
        for _ in 0..<decisions {
            let before = learning.pointee.load.sampledAt
            _ = policy.spareCPUNow(now, &learning.pointee)
            if learning.pointee.load.sampledAt != before { samples += 1 }
            now += step
        }
        #expect(samples <= 1 + decisions / Int(policy.loadSampleDecisions),
                "\(samples) load samples in \(decisions) decisions, one every \(step) ns")
        #expect(samples >= decisions / Int(policy.loadSampleDecisions), "the load is never sampled again")
    }

    @Test("back to back, the load is sampled at most once a scheduler tick however many decisions")
    func loadSampledAtMostOncePerTick() {
        defer { WaitLearning.resetCurrent() }
        WaitLearning.resetCurrent()
        let policy = Self.sampled
        let learning = WaitLearning.current
        let start = Int64(CLongThreadsShims_monotonicNanoseconds())
        var samples = 0
        // 1,000 decisions 1 µs apart: a millisecond, less than a tick.
        for index in 0..<1_000 {
            let before = learning.pointee.load.sampledAt
            _ = policy.spareCPUNow(start + Int64(index) * 1_000, &learning.pointee)
            if learning.pointee.load.sampledAt != before { samples += 1 }
        }
        #expect(samples == 1, "\(samples) load samples within one tick")
    }

    @Test("a caller whose post woke the loop spins at most as long as its own sleep and wake cost")
    func wokenReplySpinIsShort() throws {
        let policy = SameCPUSpinTests.policy
        let (budgets, _) = try SameCPUSpinTests.onOneCPU { cpu, other -> (woken: Int64, awake: Int64)? in
            let learning = WaitLearning.current
            let now = Int64(CLongThreadsShims_monotonicNanoseconds())
            learning.pointee.noteReplier(SameCPUSpinTests.replierA, cpu: other)
            let woken = policy.replySpinBudget(from: SameCPUSpinTests.replierA, replierAwake: false, now: now, &learning.pointee)
            let awake = policy.replySpinBudget(from: SameCPUSpinTests.replierA, replierAwake: true, now: now, &learning.pointee)
            return CLongThreadsShims_currentCPU() == cpu ? (woken, awake) : nil
        }
        defer { WaitLearning.resetCurrent() }
        #expect(budgets.woken > 0, "no spin at all for a woken reply")
        #expect(budgets.woken <= policy.wokenReplySpinMost,
                "spins \(budgets.woken) ns for a reply its post had to wake: longer than the \(policy.wokenReplySpinMost) ns its sleep costs")
        #expect(budgets.awake > 0 && budgets.awake <= policy.replySpinMost, "an awake loop's reply: \(budgets.awake) ns")
    }

    @Test("woken replies that keep coming late stop the spin for them, not the spin for an awake loop's reply")
    func lateWokenRepliesDoNotStopAwakeSpins() throws {
        let policy = SameCPUSpinTests.policy
        let (budgets, _) = try SameCPUSpinTests.onOneCPU { cpu, other -> (woken: Int64, awake: Int64)? in
            let learning = WaitLearning.current
            learning.pointee.noteReplier(SameCPUSpinTests.replierA, cpu: other)
            // Replies that came 2 ms after posts that had to wake their loop: every spin lost.
            SameCPUSpinTests.loseReplySpins(16)
            learning.pointee.noteReplier(SameCPUSpinTests.replierA, cpu: other)
            let now = Int64(CLongThreadsShims_monotonicNanoseconds())
            // Not a probe: the 16th woken wait would be one.
            let woken = policy.replySpinBudget(from: SameCPUSpinTests.replierA, replierAwake: false, now: now, &learning.pointee)
            let awake = policy.replySpinBudget(from: SameCPUSpinTests.replierA, replierAwake: true, now: now, &learning.pointee)
            return CLongThreadsShims_currentCPU() == cpu ? (woken, awake) : nil
        }
        defer { WaitLearning.resetCurrent() }
        #expect(budgets.woken == 0, "still spins \(budgets.woken) ns for woken replies that came late")
        #expect(budgets.awake > 0, "no spin for an awake loop's reply after woken ones came late")
    }
}
