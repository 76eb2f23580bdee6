import CLongThreadsShims
import Foundation
@testable import LongThreads
import Testing

/// After it answers a blocked caller, a loop thread lingers (looks for work without sleeping) for
/// a few microseconds, while producers skip the wake-up. Whether it lingers depends on the
/// machine's load, so these threads force it (their `WaitPolicy`): the tests check that nothing posted around a linger is lost and that
/// a stop ends one, not how fast anything is.
@Suite("Lingering after a reply")
struct LingerTests {
    /// A thread that lingers `nanoseconds` after every reply.
    static func lingeringThread(_ name: String, nanoseconds: Int64 = 40_000) throws -> LongThread {
        try LongThread(name: name, waitPolicy: .forcing(linger: WaitPolicy.forced(nanoseconds)))
    }

    /// Spins (no system call, no sleep) for about `nanoseconds`: a post lands inside the linger or
    /// just after it.
    static func spin(nanoseconds: UInt64) {
        let start = CLongThreadsShims_monotonicNanoseconds()
        while CLongThreadsShims_monotonicNanoseconds() - start < nanoseconds {}
    }

    @Test("a post at any distance from a reply runs: inside the linger, at its end, after it")
    func postsAroundTheLingerRun() throws {
        let thread = try Self.lingeringThread("lt-linger")
        defer { thread.stop() }
        // Gaps around the 40 µs linger, in ns; each many times.
        let gaps: [UInt64] = [0, 500, 2_000, 10_000, 30_000, 38_000, 40_000, 42_000, 50_000, 80_000, 200_000]
        for round in 0..<60 {
            for gap in gaps {
                try thread.sync {}
                Self.spin(nanoseconds: gap)
                let ran = Latch()
                try thread.perform { ran.countDown() }
                // A post the loop missed would never run: nothing else wakes it.
                let didRun = ran.wait(timeout: .seconds(10))
                #expect(didRun, "round \(round), a post \(gap) ns after a reply never ran")
                if !didRun { return }
            }
        }
    }

    @Test("a post from another thread while the loop lingers runs, and so does the next one after it sleeps")
    func postsFromAnotherThreadRun() throws {
        let thread = try Self.lingeringThread("lt-linger-other")
        defer { thread.stop() }
        for round in 0..<200 {
            let ran = Latch(count: 2)
            let posted = Latch()
            let poster = Thread {
                try? thread.perform { ran.countDown() }
                posted.countDown()
            }
            try thread.sync {}
            poster.start()
            #expect(posted.wait())
            // Well after any linger: the loop sleeps, and this post must wake it.
            Self.spin(nanoseconds: UInt64(round % 4) * 50_000)
            try thread.perform { ran.countDown() }
            let didRun = ran.wait(timeout: .seconds(10))
            #expect(didRun, "round \(round): a post was lost")
            if !didRun { return }
        }
    }

    @Test("a stop that comes while the loop lingers ends the linger", arguments: [LongThread.PendingWork.drain, .discard])
    func stopEndsALinger(pending: LongThread.PendingWork) throws {
        for round in 0..<20 {
            // A ten-second linger: a stop that waited for its end would take that long.
            let thread = try Self.lingeringThread("lt-linger-stop", nanoseconds: 10_000_000_000)
            try thread.sync {}
            let started = ContinuousClock.now
            thread.stop(pending: pending)
            let took = ContinuousClock.now - started
            #expect(took < .seconds(5), "round \(round): the stop waited \(took) for the linger to end")
            if took >= .seconds(5) { return }
        }
    }

    @Test("with lingering off, round trips and posts still work")
    func neverLingering() throws {
        let thread = try Self.lingeringThread("lt-no-linger", nanoseconds: -1)
        defer { thread.stop() }
        for value in 0..<1_000 { #expect(try thread.sync { value } == value) }
        let ran = Latch()
        try thread.perform { ran.countDown() }
        #expect(ran.wait())
    }
}

/// A spin or a linger helps only while the thread it waits for runs on another CPU. A reply tells
/// the caller which CPU replied, and the replier which CPU its caller was on; either skips its spin
/// when that is its own CPU. Checked on the shims directly: the scheduler decides where real
/// threads run. Each check runs with this thread pinned to one CPU (it cannot move mid-check) and
/// a spare CPU forced (pinned, the thread has none of its own: `policy`),
/// and is made only when a control (the same calls with the other thread on another CPU) shows
/// spinning would otherwise happen, before and after the budget under test. Each try starts from
/// a fresh spin history: one whose spins lost only spins every 16th wait, which would zero a
/// budget for a reason other than the hint. A machine with one CPU, or a thread that cannot be
/// pinned, cancels the test (reported as skipped, with the reason); a try that stays inconclusive
/// fails it.
@Suite("Spinning for a thread on the same CPU")
struct SameCPUSpinTests {
    /// The machine's rules with a spare CPU.
    static let policy = WaitPolicy.forcing(spareCPU: true)

    /// The calling thread's learning.
    static var learning: UnsafeMutablePointer<WaitLearning> { WaitLearning.current }

    static var now: Int64 { Int64(CLongThreadsShims_monotonicNanoseconds()) }

    /// Runs `measure(cpu, otherCPU)` until a try is conclusive, and checks that try: `measure`
    /// returns the budget with the other thread on another CPU (the control), the budget under
    /// test, and the CPU the latter's event recorded. `skips`: whether the budget under test must
    /// be 0 (the spin skipped) or, like the control, positive.
    static func check(
        _ what: String, skips: Bool = true,
        _ measure: (_ cpu: Int32, _ other: Int32) -> (control: Int64, underTest: Int64, recorded: Int32)
    ) throws {
        let (budget, cpu) = try onOneCPU { cpu, other -> (control: Int64, underTest: Int64, recorded: Int32)? in
            let budget = measure(cpu, other)
            // The control again, after the budget under test.
            let again = measure(cpu, other)
            return budget.recorded == cpu && budget.control > 0 && again.control > 0 ? budget : nil
        }
        if skips {
            #expect(budget.underTest == 0, "\(what) \(budget.underTest) ns for a thread on CPU \(cpu), its own")
        } else {
            #expect(budget.underTest > 0, "\(what)")
        }
    }

    /// A check whose tries all came out inconclusive although its thread stayed on one CPU.
    struct Inconclusive: Error, CustomStringConvertible {
        let tries: Int
        let cpu: Int32
        var description: String { "no conclusive try in \(tries), with the thread pinned to CPU \(cpu)" }
    }

    /// Tries `body(cpu, otherCPU)` with this thread pinned to the CPU it is on, each time from a
    /// fresh spin history, until `body` finds a try conclusive (non-nil); returns that result and
    /// the CPU. Cancels the test (skipped, with the reason) when there is no second CPU or the
    /// thread cannot be pinned; throws `Inconclusive` (a failure) when no try was conclusive.
    static func onOneCPU<Result>(_ body: (_ cpu: Int32, _ other: Int32) -> Result?) throws -> (Result, Int32) {
        let allowed = Affinity.allowedCPUs()
        guard allowed.count > 1 else { try Test.cancel("needs two CPUs to run on, has \(allowed)") }
        let here = CLongThreadsShims_currentCPU()
        guard here >= 0, Affinity.pin(0, to: [here]) else { try Test.cancel("cannot pin the test's thread to one CPU") }
        defer { Affinity.pin(0, to: allowed) }
        let cpu = CLongThreadsShims_currentCPU()
        let other = allowed.first { $0 != cpu } ?? cpu
        let tries = 20
        for _ in 0..<tries {
            WaitLearning.resetCurrent()
            if let result = body(cpu, other) { return (result, cpu) }
        }
        throw Inconclusive(tries: tries, cpu: cpu)
    }

    /// Replies on this thread, as a loop thread would, to a caller on `cpu` (nil: this thread's
    /// own), which tells this thread's next linger or park where its caller was. Returns the CPU
    /// the reply recorded.
    @discardableResult
    static func answerCaller(on cpu: Int32? = nil) -> Int32 {
        var event = CLongThreadsShims_Event()
        CLongThreadsShims_eventInit(&event)  // made here: the caller's CPU is this one
        if let cpu { event.waiterCPU = cpu }
        OneShotEvent.reply(to: &event)
        return event.waiterCPU
    }

    @Test("the loop thread does not linger for a caller that was on its own CPU")
    func noLingerForCallerOnSameCPU() throws {
        try Self.check("lingered") { _, other in
            Self.answerCaller(on: other)
            let forOther = Self.policy.lingerBudget(&Self.learning.pointee)
            let recorded = Self.answerCaller()
            return (forOther, Self.policy.lingerBudget(&Self.learning.pointee), recorded)
        }
    }

    static var replierA: UnsafeRawPointer { UnsafeRawPointer(bitPattern: 0xA0)! }
    static var replierB: UnsafeRawPointer { UnsafeRawPointer(bitPattern: 0xB0)! }

    /// Replies from `replierA`, first as if from `other`, then from this CPU; returns the spin
    /// budget for `replierA` after the first (the control), the budget for `asked` after the
    /// second, and the CPU the second recorded.
    static func spinBudgets(asking asked: UnsafeRawPointer, other: Int32) -> (control: Int64, underTest: Int64, recorded: Int32) {
        learning.pointee.replierKey = replierA
        defer { learning.pointee.replierKey = nil }
        var control = CLongThreadsShims_Event()
        CLongThreadsShims_eventInit(&control)
        OneShotEvent.reply(to: &control)
        control.replierCPU = other
        // Set: returns at once, noting the reply.
        OneShotEvent.waitForReply(&control, from: replierA, replierAwake: false, policy: policy)
        let forOther = policy.replySpinBudget(from: replierA, replierAwake: false, now: now, &learning.pointee)
        var event = CLongThreadsShims_Event()
        CLongThreadsShims_eventInit(&event)
        OneShotEvent.reply(to: &event)  // replied from this CPU
        OneShotEvent.waitForReply(&event, from: replierA, replierAwake: false, policy: policy)
        return (forOther, policy.replySpinBudget(from: asked, replierAwake: false, now: now, &learning.pointee),
                event.replierCPU)
    }

    /// Notes `replierA` as last seen on `other`, then on `cpu`; returns `budget(replierA)` after
    /// each, and `cpu`.
    static func budgetsAfterNoting(
        _ cpu: Int32, _ other: Int32, _ budget: (UnsafeRawPointer) -> Int64
    ) -> (control: Int64, underTest: Int64, recorded: Int32) {
        learning.pointee.noteReplier(replierA, cpu: other)
        let forOther = budget(replierA)
        learning.pointee.noteReplier(replierA, cpu: cpu)
        return (forOther, budget(replierA), cpu)
    }

    @Test("a creator does not spin for its new thread's first reply when the thread started on its CPU")
    func noSpinForNewThreadOnSameCPU() throws {
        // What `ThreadCore.start` notes from the start handshake: the new thread's key and CPU.
        try Self.check("would spin") {
            Self.budgetsAfterNoting($0, $1) {
                Self.policy.replySpinBudget(from: $0, replierAwake: false, now: Self.now, &Self.learning.pointee)
            }
        }
    }

    @Test("a joiner does not spin for the end of a thread last seen on its own CPU")
    func noJoinSpinForThreadOnSameCPU() throws {
        try Self.check("would spin in the join") {
            Self.budgetsAfterNoting($0, $1) { Self.policy.joinSpinBudget(for: $0, now: Self.now, &Self.learning.pointee) }
        }
    }

    @Test("a caller does not spin for a reply when that thread's last reply came from its own CPU")
    func noSpinWhenReplierOnSameCPU() throws {
        try Self.check("would spin") { _, other in Self.spinBudgets(asking: Self.replierA, other: other) }
    }

    @Test("the hint is kept per thread: one thread's reply from the caller's CPU does not stop a spin for another")
    func hintIsPerReplier() throws {
        try Self.check("no spin for replier B after replier A answered from this CPU", skips: false) { _, other in
            Self.spinBudgets(asking: Self.replierB, other: other)
        }
    }

    /// Found in CI (under ThreadSanitizer): once a thread's spins kept losing, only every 16th
    /// wait spins, so a control that spun was followed by a budget of 0 under test, for a reason
    /// that is not the hint. The same check, on a thread whose spins have just lost.
    @Test("the per-thread hint check holds on a thread whose recent spins lost")
    func hintIsPerReplierAfterLosses() throws {
        Self.loseReplySpins(16)
        try Self.check("no spin for replier B after replier A answered from this CPU", skips: false) { _, other in
            Self.spinBudgets(asking: Self.replierB, other: other)
        }
    }

    /// Makes `count` reply waits on this thread whose spin loses: the reply comes about 2 ms
    /// later (any delay past the spin's 15 µs budget loses), from another thread, with a spare CPU
    /// forced (so each spins).
    static func loseReplySpins(_ count: Int) {
        for _ in 0..<count {
            let event = UnsafeMutablePointer<CLongThreadsShims_Event>.allocate(capacity: 1)
            CLongThreadsShims_eventInit(event)
            nonisolated(unsafe) let shared = event
            let replierDone = Latch()
            let replier = Thread {
                usleep(2_000)
                CLongThreadsShims_eventSignal(shared)
                replierDone.countDown()
            }
            replier.start()
            OneShotEvent.waitForReply(event, from: nil, replierAwake: false, policy: policy)
            // The replier may still be inside the signal's futex wake: free the event after it.
            #expect(replierDone.wait())
            event.deallocate()
        }
    }
}
