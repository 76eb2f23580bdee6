@testable import LongThreads
import Foundation
import Testing

@Suite("Lifecycle state machine")
struct LifecycleTests {
    @Test("a stop before the loop started is kept (sticky)")
    func stickyStop() {
        var lifecycle = Lifecycle()
        #expect(lifecycle.stopRequested(.drain) == .drain)
        lifecycle.loopStarted()
        #expect(lifecycle.state == .stopping(.drain))
        #expect(!lifecycle.acceptsWork)
    }

    @Test("stops are idempotent; discard may cut a drain short, not the reverse")
    func idempotent() {
        var lifecycle = Lifecycle()
        lifecycle.loopStarted()
        #expect(lifecycle.acceptsWork)
        #expect(lifecycle.stopRequested(.drain) == .drain)
        #expect(lifecycle.stopRequested(.drain) == StopActionNone)
        #expect(lifecycle.stopRequested(.discard) == .discard)
        #expect(lifecycle.stopRequested(.drain) == StopActionNone)
        #expect(lifecycle.stopRequested(.discard) == StopActionNone)
        lifecycle.loopExited()
        #expect(lifecycle.stopRequested(.discard) == StopActionNone)
    }

    @Test("the pthread is joined once; later callers wait for the joiner")
    func joinOnce() {
        var lifecycle = Lifecycle()
        #expect(lifecycle.claimJoin() == .done)
        lifecycle.threadCreated(pthread_self())
        #expect(lifecycle.claimJoin() == .join(pthread_self()))
        #expect(lifecycle.claimJoin() == .waitForJoiner)
        let detachedWhileJoining = lifecycle.detachRequested()
        #expect(!detachedWhileJoining)
        lifecycle.joinFinished()
        #expect(lifecycle.claimJoin() == .done)
    }

    @Test("a thread that detached itself is never joined")
    func detached() {
        var lifecycle = Lifecycle()
        lifecycle.threadCreated(pthread_self())
        let detached = lifecycle.detachRequested()
        #expect(detached)
        #expect(lifecycle.claimJoin() == .done)
    }
}

private let StopActionNone = Lifecycle.StopAction.none

@Suite("Mode table")
struct ModeTableTests {
    @Test("default is bit 0, common bit 1, custom modes get the next bits once")
    func bits() throws {
        var table = ModeTable()
        var registered: [String] = []
        #expect(try table.mask(for: [.default]) { registered.append($0) } == ModeTable.defaultBit)
        #expect(try table.mask(for: [.common]) { registered.append($0) } == ModeTable.commonBit)
        let tracking = try table.mask(for: [RunLoop.Mode("tracking")]) { registered.append($0) }
        #expect(tracking == 1 << 2)
        #expect(try table.mask(for: [RunLoop.Mode("tracking"), .default]) { registered.append($0) } == tracking | 1)
        #expect(registered == ["tracking"])
    }

    @Test("a run in a mode may run its own work and, in a common mode, .common work")
    func eligibility() throws {
        var table = ModeTable()
        let tracking = try table.mask(for: [RunLoop.Mode("tracking")]) { _ in }
        #expect(table.eligibility(inModeNamed: RunLoop.Mode.default.rawValue) == ModeTable.defaultBit | ModeTable.commonBit)
        #expect(table.eligibility(inModeNamed: "tracking") == tracking)
        table.addToCommonSet(tracking)
        #expect(table.eligibility(inModeNamed: "tracking") == tracking | ModeTable.commonBit)
        #expect(table.eligibility(inModeNamed: "unknown") == 0)
        #expect(table.drainMode(for: tracking) == "tracking")
        #expect(table.drainMode(for: ModeTable.commonBit) == RunLoop.Mode.default.rawValue)
    }

    @Test("empty mode lists and too many modes are refused")
    func refusals() throws {
        var table = ModeTable()
        #expect(throws: LongThreadError.noModes) { try table.mask(for: []) { _ in } }
        for index in 0..<ModeTable.customModeLimit {
            _ = try table.mask(for: [RunLoop.Mode("m\(index)")]) { _ in }
        }
        #expect(throws: LongThreadError.tooManyModes(limit: 62)) { try table.mask(for: [RunLoop.Mode("one-more")]) { _ in } }
    }
}

@Suite("Observer targets")
struct ObserverTargetTests {
    @Test("observers cancelled from another thread leave no callout target behind")
    func cancelledObserversLeaveNothing() throws {
        let thread = try LongThread(name: "lt-observer-targets")
        defer { thread.stop() }
        for _ in 0..<50 {
            let observers = try (0..<4).map { _ in try thread.addObserver(for: .all) { _ in } }
            try thread.sync {}
            #expect(thread.core.observerTargets.count == 4)
            observers.forEach { $0.cancel() }
            #expect(thread.core.observerTargets.count == 0)
        }
    }

    @Test("a stop leaves no observer target behind")
    func stopLeavesNothing() throws {
        let thread = try LongThread(name: "lt-observer-targets-stop")
        _ = try thread.addObserver(for: .all) { _ in }
        let core = thread.core
        thread.stop()
        #expect(core.observerTargets.count == 0)
    }
}

@Suite("Work queue")
struct WorkQueueTests {
    @Test("a discard looks at each entry only when one has a waiter to tell")
    func mustTell() {
        var queue = WorkQueue()
        for _ in 0..<3 { _ = queue.append(QueueEntry(item: .fireAndForget {}, modes: ModeTable.defaultBit)) }
        var taken = queue.removeAll()
        #expect(!taken.mustTell)

        _ = queue.append(QueueEntry(item: .fireAndForget {}, modes: ModeTable.defaultBit))
        let waiter = BlockingWork({})
        _ = queue.append(QueueEntry(item: .waiting(waiter), modes: ModeTable.defaultBit))
        taken = queue.removeAll()
        #expect(taken.mustTell)
        #expect(taken.entries.count == 2)
        taken = queue.removeAll()
        #expect(!taken.mustTell) // counted afresh after each removal

        // Entries moved to the loop's batch leave the queue: the count starts again.
        _ = queue.append(QueueEntry(item: .waiting(BlockingWork({})), modes: ModeTable.defaultBit))
        var batch: [QueueEntry] = []
        let moved = queue.moveAll(to: &batch)
        #expect(moved)
        _ = queue.append(QueueEntry(item: .fireAndForget {}, modes: ModeTable.defaultBit))
        taken = queue.removeAll()
        #expect(!taken.mustTell)
    }
}
