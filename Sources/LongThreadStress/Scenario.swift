import CLongThreadsShims
import Foundation
import LongThreads

/// One stop-and-teardown situation; each cycle of the tool runs one on a fresh LongThread.
enum Scenario: String, CaseIterable, Sendable {
    case stopRacingProducers = "stop-racing-producers"
    case concurrentStops = "concurrent-stops"
    case lastReferenceElsewhere = "last-reference-elsewhere"
    case lastReferenceOnThread = "last-reference-on-thread"
    case ownerDeallocated = "owner-deallocated"
    case stopFromInside = "stop-from-inside"
    case performAfterStop = "perform-after-stop"
    case syncWaitersDiscard = "sync-waiters-discard"
    case stopDuringNestedRun = "stop-during-nested-run"
    case stopWithPendingTimers = "stop-with-pending-timers"
    case longTaskDuringStop = "long-task-during-stop"
    case millionQueued = "million-queued"
    case watchedDuringStop = "watched-during-stop"

    var summary: String {
        switch self {
        case .stopRacingProducers: "producers post (async and sync) while stop(drain|discard) comes at a random moment"
        case .concurrentStops: "several threads call stop at once, mixing drain and discard"
        case .lastReferenceElsewhere: "the last reference is dropped on another thread while producers post"
        case .lastReferenceOnThread: "the last reference is dropped by a task on the thread itself"
        case .ownerDeallocated: "the owner goes away while producers post"
        case .stopFromInside: "a task on the thread calls stop"
        case .performAfterStop: "every post after stop must throw .stopped"
        case .syncWaitersDiscard: "sync waiters blocked behind a task while a discarding stop comes"
        case .stopDuringNestedRun: "stop while a task runs the loop nested in another mode"
        case .stopWithPendingTimers: "stop while timers are pending: each fired or was cancelled"
        case .longTaskDuringStop: "a long task runs while stop waits"
        case .millionQueued: "stop with a million items still queued (drain or discard)"
        case .watchedDuringStop:
            "a stall monitor (stack capture, slow delivery) is watched and unwatched while work stalling on the CPU runs and stop comes"
        }
    }

    /// Picks a scenario for a mixed run; the million-item one is heavy, so it comes rarely.
    static func random(using rng: inout SeededGenerator) -> Scenario {
        if Int.random(in: 0..<100, using: &rng) == 0 { return .millionQueued }
        return allCases.filter { $0 != .millionQueued }.randomElement(using: &rng)!
    }
}

/// The random choices of one cycle, drawn up front so a seed replays them exactly.
struct CycleChoices {
    let pending: LongThread.PendingWork
    let items: Int
    let waitEvery: Int
    let delayMicroseconds: UInt32
    let taskMicroseconds: UInt32

    init(using rng: inout SeededGenerator) {
        pending = Bool.random(using: &rng) ? .drain : .discard
        items = Int.random(in: 50...400, using: &rng)
        waitEvery = [0, 3, 7, 16].randomElement(using: &rng)!
        delayMicroseconds = UInt32.random(in: 0...2_000, using: &rng)
        taskMicroseconds = UInt32.random(in: 1_000...15_000, using: &rng)
    }
}

/// What one cycle found.
struct CycleResult {
    var accepted = 0
    var tasksRun = 0
    var discarded = 0
    var waitersToldDiscarded = 0
    var refused = 0
    var lost = 0
    var problems: [String] = []
    var stalls = StallCounts()
}

/// The slow-dispatch reports a stall monitor delivered, by what they carry.
struct StallCounts {
    var reports = 0
    /// Reports with the stalled thread's stack taken with the capture signal: sent and handled.
    var withStack = 0
    /// Reports of a thread asleep in the kernel (its stack walked from /proc's record, no signal sent).
    var inKernel = 0

    static func += (total: inout StallCounts, more: StallCounts) {
        total.reports += more.reports
        total.withStack += more.withStack
        total.inKernel += more.inKernel
    }
}

/// Counts a monitor's reports; its handler runs on the monitor's thread.
final class StallRecorder: @unchecked Sendable {
    private let lock = NSLock()
    // Guarded by `lock`.
    private var counts = StallCounts()

    func record(_ report: StallMonitor.Report) {
        guard report.kind == .slowDispatch else { return }
        lock.withLock {
            counts.reports += 1
            if report.stackSource == .signal { counts.withStack += 1 }
            if report.kernelWait != nil { counts.inKernel += 1 }
        }
    }

    var value: StallCounts { lock.withLock { counts } }
}

final class Holder: @unchecked Sendable {
    private let lock = NSLock()
    private var strong: LongThread?
    init(_ thread: LongThread?) { strong = thread }
    func take() -> LongThread? { lock.withLock { defer { strong = nil }; return strong } }
    func peek() -> LongThread? { lock.withLock { strong } }
}

final class Tally: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0
    func add() { lock.withLock { count += 1 } }
    var value: Int { lock.withLock { count } }
}

final class WeakHandle: @unchecked Sendable {
    weak var thread: LongThread?
    init(_ thread: LongThread) { self.thread = thread }
}

/// Posts one setup item through the ledger (so a discarding stop that drops it is accounted for).
func post(_ thread: LongThread, ledger: Ledger, _ body: @escaping @Sendable () -> Void) {
    let id = ledger.newItem()
    do {
        try thread.perform {
            ledger.ran(id)
            body()
        }
        ledger.acceptedItem()
    } catch {
        ledger.refusedItem()
    }
}

/// Posts `items` items, every `waitEvery`-th with `sync` (0: none), recording each in `ledger`.
func produce(items: Int, waitEvery: Int, ledger: Ledger, thread: () -> LongThread?) {
    for index in 0..<items {
        guard let target = thread() else { return }
        let id = ledger.newItem()
        do {
            if waitEvery > 0, index % waitEvery == 0 {
                do {
                    try target.sync { ledger.ran(id) }
                    ledger.waited(id, ran: true)
                } catch LongThreadError.discarded {
                    ledger.waited(id, ran: false)
                }
            } else {
                try target.perform { ledger.ran(id) }
                ledger.acceptedItem()
            }
        } catch {
            ledger.refusedItem()
        }
    }
}

/// Runs `scenario` once on a fresh thread.
func runCycle(_ scenario: Scenario, choices: CycleChoices, producers: Int, hangTimeout: Duration) throws -> CycleResult {
    let cycle = Cycle(choices: choices, producers: producers, hangTimeout: hangTimeout)
    let outcome = try cycle.run(scenario)
    let ledger = cycle.ledger
    let (lost, found) = ledger.lost(discardedByThread: outcome.discardedByThread)
    return CycleResult(
        accepted: ledger.accepted, tasksRun: ledger.tasksRun, discarded: outcome.discardedByThread,
        waitersToldDiscarded: ledger.waitersToldDiscarded, refused: ledger.refused,
        lost: lost, problems: outcome.problems + found, stalls: outcome.stalls
    )
}

/// What a scenario saw besides its ledger: how many items the thread says it discarded, and any
/// problem found on the way.
struct ScenarioOutcome {
    var discardedByThread = 0
    var problems: [String] = []
    var stalls = StallCounts()
}

/// One cycle: its ledger and choices, and one method per scenario.
struct Cycle: Sendable {
    let ledger = Ledger()
    let choices: CycleChoices
    let producers: Int
    let hangTimeout: Duration

    func run(_ scenario: Scenario) throws -> ScenarioOutcome {
        switch scenario {
        case .stopRacingProducers: try stopRacingProducers(longTask: false)
        case .longTaskDuringStop: try stopRacingProducers(longTask: true)
        case .concurrentStops: try concurrentStops()
        case .lastReferenceElsewhere: try lastReferenceElsewhere()
        case .lastReferenceOnThread: try lastReferenceOnThread()
        case .ownerDeallocated: try ownerDeallocated()
        case .stopFromInside: try stopFromInside()
        case .performAfterStop: try performAfterStop()
        case .syncWaitersDiscard: try syncWaitersDiscard()
        case .stopDuringNestedRun: try stopDuringNestedRun()
        case .stopWithPendingTimers: try stopWithPendingTimers()
        case .watchedDuringStop: try watchedDuringStop()
        case .millionQueued: try millionQueued()
        }
    }

    // MARK: Helpers

    func startProducers(_ count: Int, thread: @escaping @Sendable () -> LongThread?) -> [pthread_t] {
        (0..<count).map { _ in spawn { produce(items: choices.items, waitEvery: choices.waitEvery, ledger: ledger, thread: thread) } }
    }

    func ended(_ thread: LongThread, _ what: String) -> [String] {
        thread.waitUntilExit(timeout: hangTimeout) ? [] : ["\(what): the thread did not end"]
    }

    // MARK: Scenarios

    func stopRacingProducers(longTask: Bool) throws -> ScenarioOutcome {
        let thread = try LongThread(name: "stress")
        if longTask { post(thread, ledger: ledger) { usleep(choices.taskMicroseconds) } }
        let workers = startProducers(producers) { thread }
        usleep(choices.delayMicroseconds)
        thread.stop(pending: choices.pending)
        join(workers)
        return ScenarioOutcome(discardedByThread: thread.statistics.discarded)
    }

    func concurrentStops() throws -> ScenarioOutcome {
        let thread = try LongThread(name: "stress")
        let workers = startProducers(producers) { thread }
        usleep(choices.delayMicroseconds)
        let notEnded = Tally()
        let stoppers = (0..<3).map { index in
            spawn {
                thread.stop(pending: index == 0 ? choices.pending : .drain)
                if !thread.waitUntilExit(timeout: .zero) { notEnded.add() }
            }
        }
        join(stoppers + workers)
        var outcome = ScenarioOutcome(discardedByThread: thread.statistics.discarded)
        if notEnded.value > 0 { outcome.problems.append("\(notEnded.value) stop calls returned before the thread ended") }
        return outcome
    }

    func lastReferenceElsewhere() throws -> ScenarioOutcome {
        let holder = Holder(try LongThread(name: "stress"))
        let weak = WeakHandle(holder.peek()!)
        let workers = startProducers(producers) { weak.thread }
        usleep(choices.delayMicroseconds)
        join([spawn { _ = holder.take() }] + workers)
        return ScenarioOutcome(problems: weak.thread != nil ? ["the thread outlived its last reference"] : [])
    }

    func lastReferenceOnThread() throws -> ScenarioOutcome {
        let holder = Holder(try LongThread(name: "stress"))
        let weak = WeakHandle(holder.peek()!)
        let tid = try holder.peek()!.sync { CurrentThread.id }
        // Drops the holder's reference on the thread; a producer's may still be the last one.
        post(holder.peek()!, ledger: ledger) { _ = holder.take() }
        join(startProducers(producers) { weak.thread })
        let ended = waitForExit(tid: tid, timeout: hangTimeout)
        return ScenarioOutcome(problems: ended ? [] : ["the thread did not end after its last reference"])
    }

    func ownerDeallocated() throws -> ScenarioOutcome {
        var owner: NSObject? = NSObject()
        let thread = try LongThread(name: "stress", owner: owner)
        let workers = startProducers(producers) { thread }
        usleep(choices.delayMicroseconds)
        owner = nil
        post(thread, ledger: ledger) {} // wakes the loop, which then finds the owner gone
        join(workers)
        return ScenarioOutcome(problems: ended(thread, "owner gone"))
    }

    func stopFromInside() throws -> ScenarioOutcome {
        let thread = try LongThread(name: "stress")
        let workers = startProducers(producers) { thread }
        usleep(choices.delayMicroseconds)
        post(thread, ledger: ledger) { thread.stop() }
        join(workers)
        return ScenarioOutcome(problems: ended(thread, "stop from inside"))
    }

    func performAfterStop() throws -> ScenarioOutcome {
        let thread = try LongThread(name: "stress")
        thread.stop(pending: choices.pending)
        join(startProducers(producers) { thread })
        return ScenarioOutcome(problems: ledger.accepted != 0 ? ["\(ledger.accepted) posts accepted after stop"] : [])
    }

    func syncWaitersDiscard() throws -> ScenarioOutcome {
        let thread = try LongThread(name: "stress")
        let gate = DispatchSemaphore(value: 0)
        post(thread, ledger: ledger) { gate.wait() }
        let waiters = (0..<producers).map { _ in
            spawn { produce(items: 5, waitEvery: 1, ledger: ledger) { thread } }
        }
        usleep(choices.delayMicroseconds)
        thread.stop(waitUntilDone: false, pending: .discard)
        gate.signal()
        thread.stop()
        join(waiters)
        return ScenarioOutcome(discardedByThread: thread.statistics.discarded)
    }

    func stopDuringNestedRun() throws -> ScenarioOutcome {
        let thread = try LongThread(name: "stress")
        let tracking = RunLoop.Mode("tracking")
        post(thread, ledger: ledger) { _ = try? thread.runNested(in: tracking, until: .now + .seconds(5)) }
        let workers = (0..<producers).map { index in
            spawn {
                for _ in 0..<choices.items {
                    let id = ledger.newItem()
                    do {
                        try thread.perform(modes: index % 2 == 0 ? [tracking] : [.default]) { ledger.ran(id) }
                        ledger.acceptedItem()
                    } catch { ledger.refusedItem() }
                }
            }
        }
        usleep(choices.delayMicroseconds)
        thread.stop(pending: choices.pending)
        join(workers)
        return ScenarioOutcome(discardedByThread: thread.statistics.discarded)
    }

    func stopWithPendingTimers() throws -> ScenarioOutcome {
        let thread = try LongThread(name: "stress")
        let timers = (0..<choices.items / 10).compactMap { index in
            try? thread.perform(after: .microseconds(Int(choices.delayMicroseconds) * (index % 20))) {}
        }
        usleep(choices.delayMicroseconds * 5)
        thread.stop(pending: choices.pending)
        var outcome = ScenarioOutcome()
        if let pending = timers.first(where: { !$0.isCancelled }) {
            outcome.problems.append("a timer neither fired nor was cancelled: \(pending)")
        }
        if thread.statistics.pendingTimers != 0 { outcome.problems.append("timers still pending after stop") }
        return outcome
    }

    func watchedDuringStop() throws -> ScenarioOutcome {
        let thread = try LongThread(name: "stress")
        let stalls = StallRecorder()
        let monitor = try StallMonitor(threshold: .microseconds(300), deliveryThreshold: .microseconds(500)) { stalls.record($0) }
        monitor.watch(thread)
        // Stalls among the producers' short items, on the CPU (0.7 to 2.1 ms, past the threshold):
        // the monitor signals the thread for its stack, during the stop too. (A thread asleep in
        // a system call such as `usleep` is reported from /proc instead, with no signal.)
        let stallers = spawn {
            for _ in 0..<20 { post(thread, ledger: ledger) { spin(microseconds: 600 + choices.taskMicroseconds / 10) } }
        }
        let toggler = spawn {
            for round in 0..<200 {
                if round % 2 == 0 { monitor.unwatch(thread) } else { monitor.watch(thread) }
                usleep(50)
            }
        }
        let workers = startProducers(producers) { thread }
        usleep(choices.delayMicroseconds)
        thread.stop(pending: choices.pending)
        join(workers + [stallers, toggler])
        return ScenarioOutcome(discardedByThread: thread.statistics.discarded, stalls: stalls.value)
    }

    func millionQueued() throws -> ScenarioOutcome {
        let thread = try LongThread(name: "stress")
        let gate = DispatchSemaphore(value: 0)
        post(thread, ledger: ledger) { gate.wait() }
        for _ in 0..<1_000_000 {
            let id = ledger.newItem()
            try thread.perform { ledger.ran(id) }
            ledger.acceptedItem()
        }
        thread.stop(waitUntilDone: false, pending: choices.pending)
        gate.signal()
        thread.stop()
        return ScenarioOutcome(discardedByThread: thread.statistics.discarded)
    }
}

/// Runs on the CPU for `microseconds`: a busy loop on the clock (read without a system call),
/// bounded by it.
func spin(microseconds: UInt32) {
    let end = ContinuousClock.now + .microseconds(Int(microseconds))
    while ContinuousClock.now < end {}
}

enum CurrentThread {
    static var id: Int32 { CLongThreadsShims_gettid() }
}

/// Waits until thread `tid` has left the process (a detached thread, which nobody joins).
func waitForExit(tid: Int32, timeout: Duration) -> Bool {
    let deadline = ContinuousClock.now + timeout
    while FileManager.default.fileExists(atPath: "/proc/self/task/\(tid)") {
        if ContinuousClock.now > deadline { return false }
        usleep(500)
    }
    return true
}
