@testable import LongThreads
import Foundation
import LongThreadsTestSupport
import Testing

/// A thread's timers wait in one heap by deadline under one CF timer (`TimerSchedule`).
@Suite("Timer schedule")
struct TimerScheduleTests {
    let tracking = RunLoop.Mode("tracking")

    @Test("the heap gives timers back by deadline, then scheduling order, through inserts, removals and modes")
    func heapMatchesModel() {
        let core = ThreadCore(name: "model", owner: nil, options: .init())
        var schedule = TimerSchedule()
        // The model: every timer in the schedule with its deadline, sequence and modes.
        var model: [(deadline: UInt64, sequence: Int, modes: UInt64, timer: LongThreadTimer)] = []
        var generator = SplitMix(seed: 12)
        var sequence = 0
        var now: UInt64 = 0
        var inDue: [ObjectIdentifier: Bool] = [:]
        for step in 0..<20_000 {
            switch generator.next() % 10 {
            case 0...4:
                // Deadlines from a small range, so many are equal; some passed already (while
                // due timers wait for their mode), as `perform(at:)` with a past instant makes.
                let raw = now + generator.next() % 64
                let deadline = raw > 16 ? raw - 16 : 0
                let modes: UInt64 = generator.next() % 3 == 0 ? 0b10 : 0b01
                let timer = LongThreadTimer(core: core, work: .repeating { _ in }, interval: .seconds(1), tolerance: .zero)
                sequence += 1
                schedule.insert(timer, deadline: deadline, modes: modes)
                model.append((deadline, sequence, modes, timer))
            case 5, 6:
                guard !model.isEmpty else { continue }
                let index = Int(generator.next() % UInt64(model.count))
                schedule.remove(model[index].timer)
                inDue[ObjectIdentifier(model[index].timer)] = nil
                model.remove(at: index)
            case 7:
                now += generator.next() % 16
                schedule.moveDue(upTo: now)
                for entry in model where entry.deadline <= now { inDue[ObjectIdentifier(entry.timer)] = true }
            default:
                let mask: UInt64 = generator.next() % 2 == 0 ? 0b01 : 0b11
                let expected = model
                    .filter { inDue[ObjectIdentifier($0.timer)] == true && $0.modes & mask != 0 }
                    .min { ($0.deadline, $0.sequence) < ($1.deadline, $1.sequence) }
                let taken = schedule.takeDue(eligibleIn: mask)
                #expect(taken?.timer === expected?.timer, "step \(step)")
                if let expected {
                    model.removeAll { $0.timer === expected.timer }
                    inDue[ObjectIdentifier(expected.timer)] = nil
                }
            }
            let pending = model.filter { inDue[ObjectIdentifier($0.timer)] != true }
            #expect(schedule.earliestDeadline == pending.map(\.deadline).min(), "step \(step)")
            #expect(schedule.dueCount == model.count - pending.count, "step \(step)")
        }
        schedule.removeAll()
        #expect(schedule.isEmpty)
        #expect(model.allSatisfy { $0.timer.scheduleSlot == TimerSchedule.nowhere })
    }

    @Test("10,000 timers due at once come back in deadline order, less those cancelled while due")
    func massDue() {
        let core = ThreadCore(name: "mass", owner: nil, options: .init())
        var schedule = TimerSchedule()
        var generator = SplitMix(seed: 7)
        var timers: [(deadline: UInt64, timer: LongThreadTimer)] = []
        for _ in 0..<10_000 {
            let timer = LongThreadTimer(core: core, work: .repeating { _ in }, interval: .seconds(1), tolerance: .zero)
            let deadline = generator.next() % 1_000
            schedule.insert(timer, deadline: deadline, modes: 0b01)
            timers.append((deadline, timer))
        }
        schedule.moveDue(upTo: 1_000)
        #expect(schedule.earliestDeadline == nil)
        #expect(schedule.dueCount == 10_000)
        // Holes everywhere, the head included; each cancel finds its timer by its slot.
        let cancelled = Set(timers.indices.filter { $0 % 3 == 0 })
        for index in cancelled { schedule.remove(timers[index].timer) }
        #expect(schedule.dueCount == 10_000 - cancelled.count)
        #expect(schedule.takeDue(eligibleIn: 0b10) == nil)
        var taken: [UInt64] = []
        while let entry = schedule.takeDue(eligibleIn: 0b01) {
            #expect(entry.timer.scheduleSlot == TimerSchedule.nowhere)
            taken.append(entry.deadline)
        }
        #expect(taken.count == 10_000 - cancelled.count)
        #expect(taken == taken.sorted())
        #expect(schedule.isEmpty)
        #expect(timers.allSatisfy { $0.timer.scheduleSlot == TimerSchedule.nowhere })
    }

    @Test("a timer whose work runs the loop nested does not hold back the thread's other timers")
    func nestedRunInsideTimer() throws {
        let thread = try LongThread(name: "lt-timer-nested")
        defer { thread.stop() }
        let second = Counter()
        let seenDuringNestedRun = Recorder<Int>()
        let done = Latch()
        try thread.perform(after: .milliseconds(5)) {
            // CF never calls a timer out again while its callout runs: had the thread's timers
            // run from the CF timer's callout, the second could not fire before this run ends.
            _ = try? thread.runNested(in: .default, until: .now + .seconds(5)) { second.value == 0 }
            seenDuringNestedRun.record(second.value)
            done.countDown()
        }
        try thread.perform(after: .milliseconds(30)) { second.increment() }
        #expect(done.wait())
        #expect(seenDuringNestedRun.events == [1])
    }

    @Test("a timer due while the loop runs another mode waits for its mode, and a cancel there drops it")
    func dueTimerWaitsForItsMode() throws {
        let thread = try LongThread(name: "lt-timer-due")
        defer { thread.stop() }
        let cancelledFired = Counter()
        let keptFired = Latch()
        let (dueDuringRun, firedDuringRun) = try thread.sync { [tracking] () -> (Int, Bool) in
            // Scheduled from the loop thread, which is busy until the nested run: neither can
            // fire in the default mode first.
            let cancelled = try thread.perform(after: .milliseconds(10)) { cancelledFired.increment() }
            try thread.perform(after: .milliseconds(10)) { keptFired.countDown() }
            // Tracking-mode work proves the run passed both deadlines in a mode they may not run in.
            let trackingTicked = Latch()
            try thread.perform(after: .milliseconds(40), modes: [tracking]) { trackingTicked.countDown() }
            try thread.runNested(in: tracking, until: .now + .seconds(5)) { !trackingTicked.isOpen }
            let due = thread.core.shared.withLock { $0.timerSchedule.dueCount }
            let fired = keptFired.isOpen
            cancelled.cancel()
            return (due, fired)
        }
        #expect(dueDuringRun == 2)
        #expect(!firedDuringRun)
        #expect(keptFired.wait())
        try thread.sync {}
        #expect(cancelledFired.value == 0)
        #expect(thread.statistics.pendingTimers == 0)
    }

    @Test("a timer of another mode that fell due while the loop ran the default mode fires when a run in its mode begins")
    func dueTimerFiresOnEntry() throws {
        let thread = try LongThread(name: "lt-timer-entry")
        defer { thread.stop() }
        let fired = Latch()
        try thread.perform(after: .milliseconds(5), modes: [tracking]) { fired.countDown() }
        // The idle loop (default mode) meets the deadline and keeps the timer as due.
        #expect(waitUntil { thread.core.shared.withLock { $0.timerSchedule.dueCount } == 1 })
        #expect(!fired.isOpen)
        let firedInNestedRun = try thread.sync { [tracking] () -> Bool in
            // Only the run's entry can give it a look: nothing is posted, no deadline is left.
            try thread.runNested(in: tracking, until: .now + .seconds(5)) { !fired.isOpen }
            return fired.isOpen
        }
        #expect(firedInNestedRun)
    }

    @Test(".common work and timers waiting in a nested run run once its mode joins the common set")
    func commonModeAddedDuringNestedRun() throws {
        let thread = try LongThread(name: "lt-common-late")
        defer { thread.stop() }
        let workRan = Latch()
        let timerFired = Latch()
        let inNestedRun = Latch()
        let outcome = Recorder<(work: Bool, timer: Bool)>()
        try thread.perform { [tracking] in
            // Registers `tracking` (not a common mode yet) and runs it nested until both ran.
            _ = try? thread.runNested(in: tracking, until: .now + .milliseconds(1)) { false }
            inNestedRun.countDown()
            _ = try? thread.runNested(in: tracking, until: .now + .seconds(10)) { !(workRan.isOpen && timerFired.isOpen) }
            outcome.record((workRan.isOpen, timerFired.isOpen))
        }
        #expect(inNestedRun.wait())
        try thread.perform(modes: [.common]) { workRan.countDown() }
        try thread.perform(after: .milliseconds(1), modes: [.common]) { timerFired.countDown() }
        // Both wait: the nested run's mode is not common (the timer as due, once its deadline
        // passed). Then it becomes one, and nothing else is posted (a post would make the nested
        // run look again on its own).
        #expect(waitUntil { thread.core.shared.withLock { $0.timerSchedule.dueCount } == 1 })
        #expect(!workRan.isOpen && !timerFired.isOpen)
        try thread.addCommonMode(tracking)
        #expect(workRan.wait(timeout: .seconds(3)))
        #expect(timerFired.wait(timeout: .seconds(3)))
        try thread.sync {}
        #expect(outcome.events.count == 1)
    }

    @Test("of many pending timers, those cancelled from another thread never fire; the rest fire, equal delays in order")
    func manyTimersCancelHalf() throws {
        let thread = try LongThread(name: "lt-many-timers")
        defer { thread.stop() }
        let count = 2_000
        let fired = Recorder<Int>()
        let allKeptFired = Latch(count: count / 2)
        // The loop thread waits while timers are scheduled and cancelled: none can fire before
        // every cancel is done, however slow this thread is.
        let scheduled = Latch()
        let blocked = Latch()
        try thread.perform {
            blocked.countDown()
            _ = scheduled.wait()
        }
        #expect(blocked.wait())
        var timers: [LongThreadTimer] = []
        for index in 0..<count {
            timers.append(try thread.perform(after: .milliseconds(1 + index % 20)) {
                fired.record(index)
                allKeptFired.countDown()
            })
        }
        for index in stride(from: 1, to: count, by: 2) { timers[index].cancel() }
        scheduled.countDown()
        #expect(allKeptFired.wait())
        try thread.sync {}
        let order = fired.events
        #expect(Set(order) == Set(stride(from: 0, to: count, by: 2)))
        // Equal delays were scheduled in index order, so their deadlines are in that order too.
        for delay in 0..<20 {
            let sameDelay = order.filter { $0 % 20 == delay }
            #expect(sameDelay == sameDelay.sorted())
        }
        #expect(thread.statistics.pendingTimers == 0)
    }
}

/// A small deterministic generator (SplitMix64), so a failing step can be replayed.
private struct SplitMix {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
