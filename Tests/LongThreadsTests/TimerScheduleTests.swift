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
                // Deadlines from a small range, so many are equal.
                let deadline = now + generator.next() % 64
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
            #expect(schedule.due.count == model.count - pending.count, "step \(step)")
        }
        schedule.removeAll()
        #expect(schedule.isEmpty)
        #expect(model.allSatisfy { $0.timer.scheduleSlot == TimerSchedule.nowhere })
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
        let cancelled = try thread.perform(after: .milliseconds(10)) { cancelledFired.increment() }
        try thread.perform(after: .milliseconds(10)) { keptFired.countDown() }
        let (dueDuringRun, firedDuringRun) = try thread.sync { [tracking] () -> (Int, Bool) in
            // Tracking-mode work proves the run passed both deadlines in a mode they may not run in.
            let trackingTicked = Latch()
            try thread.perform(after: .milliseconds(40), modes: [tracking]) { trackingTicked.countDown() }
            try thread.runNested(in: tracking, until: .now + .seconds(5)) { !trackingTicked.isOpen }
            let due = thread.core.shared.withLock { $0.timerSchedule.due.count }
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

    @Test("of many pending timers, those cancelled from another thread never fire; the rest fire, equal delays in order")
    func manyTimersCancelHalf() throws {
        let thread = try LongThread(name: "lt-many-timers")
        defer { thread.stop() }
        let count = 2_000
        let fired = Recorder<Int>()
        let allKeptFired = Latch(count: count / 2)
        var timers: [LongThreadTimer] = []
        for index in 0..<count {
            timers.append(try thread.perform(after: .milliseconds(20 + index % 20)) {
                fired.record(index)
                allKeptFired.countDown()
            })
        }
        for index in stride(from: 1, to: count, by: 2) { timers[index].cancel() }
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
