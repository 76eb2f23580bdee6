import CLongThreadsShims
import Foundation
@testable import LongThreads
import Testing

/// With no spare CPU a spin usually keeps the awaited thread off a CPU, but not while that thread
/// is on another CPU: a caller whose request found the loop thread draining spins for the reply,
/// and a loop thread that answered a caller on another CPU lingers for its next request (see
/// "Under load" in `WaitPolicy`). The machine's load is forced (`policy`); each check runs with this thread pinned to one CPU,
/// so that it cannot move mid-check (the same-CPU rule would then decide instead).
@Suite("Spinning under load")
struct LoadedSpinTests {
    /// The machine's rules with no spare CPU.
    static let policy = WaitPolicy.forcing(spareCPU: false)

    /// Runs `body(cpu, otherCPU)` with no spare CPU and this thread pinned to one CPU, and records
    /// what that try found: `body` returns its checks as (passed, what failed).
    /// Cancelled (skipped, with the reason) on a one-CPU machine (`SameCPUSpinTests.onOneCPU`).
    static func underLoad(_ body: (_ cpu: Int32, _ other: Int32) -> [(Bool, String)]) throws {
        defer { WaitLearning.resetCurrent() }
        let (checks, _) = try SameCPUSpinTests.onOneCPU(body)
        for (passed, what) in checks { #expect(passed, "\(what)") }
    }

    @Test("with no spare CPU a caller spins only for a thread that was awake when its request came")
    func callerSpinsForAnAwakeLoopOnly() throws {
        try Self.underLoad { cpu, other in
            let replier = SameCPUSpinTests.replierA
            let learning = WaitLearning.current
            let now = Int64(CLongThreadsShims_monotonicNanoseconds())
            learning.pointee.noteReplier(replier, cpu: other)
            let asleep = Self.policy.replySpinBudget(from: replier, replierAwake: false, now: now, &learning.pointee)
            let awake = Self.policy.replySpinBudget(from: replier, replierAwake: true, now: now, &learning.pointee)
            // The same-CPU rule holds under load too.
            learning.pointee.noteReplier(replier, cpu: cpu)
            let awakeHere = Self.policy.replySpinBudget(from: replier, replierAwake: true, now: now, &learning.pointee)
            return [
                (asleep == 0, "spins \(asleep) ns for a thread its post had to wake"),
                (awake > 0, "no spin for a thread that was draining its queue on CPU \(other)"),
                (awake <= Self.policy.loadedReplySpinMost, "a loaded spin of \(awake) ns: longer than its 10 µs cap"),
                (awakeHere == 0, "spins \(awakeHere) ns for a thread on its own CPU \(cpu)"),
            ]
        }
    }

    @Test("with no spare CPU the loop thread lingers for a caller on another CPU, not for one on its own")
    func loopLingersForACallerElsewhere() throws {
        try Self.underLoad { cpu, other in
            SameCPUSpinTests.answerCaller(on: other)
            let budget = Self.policy.lingerBudget(&WaitLearning.current.pointee)
            SameCPUSpinTests.answerCaller()
            let budgetHere = Self.policy.lingerBudget(&WaitLearning.current.pointee)
            return [
                (budget > 0, "no linger for a caller on CPU \(other)"),
                (budget <= Self.policy.loadedLingerMost, "a loaded linger of \(budget) ns: longer than its 20 µs cap"),
                (budgetHere == 0, "lingers \(budgetHere) ns for a caller on its own CPU \(cpu)"),
            ]
        }
    }

    @Test("round trips and posts are never lost while caller and loop thread both see no spare CPU")
    func roundTripsUnderForcedLoad() throws {
        // The loop thread's waits and this caller's waits for its replies both follow its policy.
        let thread = try LongThread(name: "lt-loaded", waitPolicy: Self.policy)
        defer { thread.stop() }
        for round in 0..<2_000 {
            #expect(try thread.sync { round } == round)
            if round % 100 == 0 {
                // A post right after a reply, inside a linger or just after it, must run.
                let ran = Latch()
                try thread.perform { ran.countDown() }
                let didRun = ran.wait(timeout: .seconds(10))
                #expect(didRun, "round \(round): a post after a reply never ran")
                if !didRun { return }
            }
        }
    }

    @Test("a post tells its caller whether it found the loop thread draining: awake while it runs a task, not asleep")
    func postSaysWhetherTheLoopWasAwake() throws {
        let thread = try LongThread(name: "lt-post-awake")
        defer { thread.stop() }
        let core = thread.core
        for round in 0..<20 {
            // Asleep: nothing queued, and the loop has left its drain (and any linger).
            let idle = Latch()
            try thread.perform { idle.countDown() }
            #expect(idle.wait())
            let deadline = ContinuousClock.now + .seconds(10)
            while core.shared.withLock({ $0.queue.consumerActive }), ContinuousClock.now < deadline { usleep(100) }
            let ran = Latch(count: 2)
            #expect(try core.enqueue(.fireAndForget { ran.countDown() }, modes: nil) == false,
                    "round \(round): a post to a sleeping loop said it was awake")
            // Awake: the loop thread is inside a task of its batch.
            let inside = Latch()
            let release = Latch()
            try thread.perform { inside.countDown(); release.wait() }
            #expect(inside.wait())
            #expect(try core.enqueue(.fireAndForget { ran.countDown() }, modes: nil) == true,
                    "round \(round): a post to a loop running a task said it was asleep")
            release.countDown()
            #expect(ran.wait())
        }
    }
}
