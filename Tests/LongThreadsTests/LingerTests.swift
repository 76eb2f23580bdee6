import CLongThreadsShims
import Foundation
import LongThreads
import Testing

/// After it answers a blocked caller, a loop thread lingers (looks for work without sleeping) for
/// a few microseconds, while producers skip the wake-up. Whether it lingers depends on the
/// machine's load, so these threads force it (`CLongThreadsShims_setLingerOverride`, set on the
/// loop thread by `setUp`): the tests check that nothing posted around a linger is lost and that
/// a stop ends one, not how fast anything is.
@Suite("Lingering after a reply")
struct LingerTests {
    /// A thread that lingers `nanoseconds` after every reply.
    static func lingeringThread(_ name: String, nanoseconds: Int64 = 40_000) throws -> LongThread {
        try LongThread(name: name, options: .init(setUp: { CLongThreadsShims_setLingerOverride(nanoseconds) }))
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
/// threads run. Each check is made only when a control (the same calls with the other thread on
/// another CPU) shows spinning would otherwise happen now (a spare CPU), and only when this thread
/// stayed on one CPU throughout; else it tries again, and a machine that never has a spare CPU
/// leaves it undecided rather than failing.
@Suite("Spinning for a thread on the same CPU")
struct SameCPUSpinTests {
    /// Runs `measure(cpu, otherCPU)` until a try is conclusive, and checks that try: `measure`
    /// returns the budget with the other thread on another CPU (the control), the budget with it
    /// on this thread's CPU, and the CPU the latter's event recorded. Nothing on a one-CPU machine.
    static func check(
        _ what: String,
        _ measure: (_ cpu: Int32, _ other: Int32) -> (forOther: Int64, forSame: Int64, recorded: Int32)
    ) {
        let count = Int32(ProcessInfo.processInfo.activeProcessorCount)
        for _ in 0..<200 {
            let cpu = CLongThreadsShims_currentCPU()
            guard cpu >= 0, count > 1 else { return }
            let budget = measure(cpu, (cpu + 1) % count)
            guard CLongThreadsShims_currentCPU() == cpu, budget.recorded == cpu, budget.forOther > 0 else { continue }
            #expect(budget.forSame == 0, "\(what) \(budget.forSame) ns for a thread on CPU \(cpu), its own")
            return
        }
        print("undecided: no spare CPU in 200 tries")
    }

    @Test("the loop thread does not linger for a caller that was on its own CPU")
    func noLingerForCallerOnSameCPU() {
        Self.check("lingered") { _, other in
            var control = CLongThreadsShims_Event()
            CLongThreadsShims_eventInit(&control)
            control.waiterCPU = other
            CLongThreadsShims_eventReply(&control)
            let forOther = CLongThreadsShims_lingerBudget()
            var event = CLongThreadsShims_Event()
            CLongThreadsShims_eventInit(&event)  // made here: the waiter's CPU is this one
            CLongThreadsShims_eventReply(&event)
            return (forOther, CLongThreadsShims_lingerBudget(), event.waiterCPU)
        }
    }

    @Test("a caller does not spin for a reply when the last reply came from its own CPU")
    func noSpinWhenReplierOnSameCPU() {
        Self.check("would spin") { _, other in
            var control = CLongThreadsShims_Event()
            CLongThreadsShims_eventInit(&control)
            CLongThreadsShims_eventReply(&control)
            control.replierCPU = other
            CLongThreadsShims_eventWaitForReply(&control)  // set: returns at once, noting the replier's CPU
            let forOther = CLongThreadsShims_replySpinBudget()
            var event = CLongThreadsShims_Event()
            CLongThreadsShims_eventInit(&event)
            CLongThreadsShims_eventReply(&event)  // replied from this CPU
            CLongThreadsShims_eventWaitForReply(&event)
            return (forOther, CLongThreadsShims_replySpinBudget(), event.replierCPU)
        }
    }
}
