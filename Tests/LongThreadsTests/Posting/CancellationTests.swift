import Foundation
import LongThreads
import Testing

@Suite("Taking back queued work: QueuedWork.cancel() and WorkGroup")
struct CancellationTests {
    @Test("cancel() before the work started removes it, releases its closure at once, and it never runs")
    func cancelBeforeStart() throws {
        let thread = try LongThread(name: "lt-cancel")
        defer { thread.stop() }
        let gate = Latch()
        try thread.occupy(until: gate)
        let ran = Counter()
        var canary: Canary? = Canary()
        let watch = WeakBox(canary!)
        let item = try thread.submit { [canary] in
            canary?.touch()
            ran.increment()
        }
        canary = nil
        #expect(item.state == .waiting)
        #expect(watch.value != nil)
        #expect(item.cancel())
        #expect(watch.value == nil) // released by cancel(), while the queue still holds the item
        #expect(item.state == .cancelled)
        #expect(!item.cancel()) // idempotent: only the first cancel removes it
        gate.countDown()
        try thread.perform(waitUntilDone: true) {}
        #expect(ran.value == 0)
    }

    @Test("cancel() after the work ran, or from inside it, returns false and changes nothing")
    func cancelAfterStart() throws {
        let thread = try LongThread(name: "lt-cancel-late")
        defer { thread.stop() }
        let inside = Recorder<Bool>()
        let handle = Recorder<LongThread.QueuedWork>()
        let started = Latch()
        let proceed = Latch()
        let item = try thread.submit {
            started.countDown()
            proceed.wait()
            inside.record(handle.events.first?.cancel() ?? true)
        }
        handle.record(item)
        #expect(started.wait())
        #expect(item.state == .running)
        #expect(!item.cancel())
        proceed.countDown()
        try thread.perform(waitUntilDone: true) {}
        #expect(inside.events == [false])
        #expect(item.state == .finished)
        #expect(!item.cancel())
    }

    @Test("items around a cancelled one still run, in order")
    func orderAroundCancelled() throws {
        let thread = try LongThread(name: "lt-cancel-order")
        defer { thread.stop() }
        let gate = Latch()
        try thread.occupy(until: gate)
        let log = Recorder<Int>()
        var items: [LongThread.QueuedWork] = []
        for index in 0..<10 {
            items.append(try thread.submit { log.record(index) })
        }
        for index in stride(from: 1, to: 10, by: 3) { #expect(items[index].cancel()) }
        gate.countDown()
        try thread.perform(waitUntilDone: true) {}
        #expect(log.events == [0, 2, 3, 5, 6, 8, 9])
    }

    @Test("cancel() racing the thread taking the item: each item either runs or is cancelled, exactly once")
    func cancelRacesRun() throws {
        let thread = try LongThread(name: "lt-cancel-race")
        defer { thread.stop() }
        let count = 20_000
        let ran = (0..<count).map { _ in Counter() }
        let items = Locked2<[LongThread.QueuedWork]>([])
        let cancelled = (0..<count).map { _ in Counter() }
        let cancellerDone = Latch()
        let canceller = Thread {
            defer { cancellerDone.countDown() }
            var next = 0
            while next < count {
                let available = items.withLock { $0.count }
                while next < available {
                    let item = items.withLock { $0[next] }
                    if item.cancel() { cancelled[next].increment() }
                    next += 1
                }
            }
        }
        canceller.start()
        for index in 0..<count {
            let item = try thread.submit { ran[index].increment() }
            items.withLock { $0.append(item) }
        }
        try thread.perform(waitUntilDone: true) {}
        #expect(cancellerDone.wait(timeout: .seconds(60)))
        var bothOrNeither = 0
        var cancelledCount = 0
        for index in 0..<count {
            if ran[index].value + cancelled[index].value != 1 { bothOrNeither += 1 }
            cancelledCount += cancelled[index].value
            let state = items.withLock { $0[index].state }
            #expect(state == (cancelled[index].value == 1 ? .cancelled : .finished))
        }
        #expect(bothOrNeither == 0)
        // Not asserted (it depends on timing): how many lost the race each way.
        _ = cancelledCount
    }

    @Test("WorkGroup.cancelAll() removes the group's waiting items on every thread, and only those")
    func groupCancelAll() throws {
        let first = try LongThread(name: "lt-group-1")
        let second = try LongThread(name: "lt-group-2")
        defer {
            first.stop()
            second.stop()
        }
        let gate = Latch()
        try first.occupy(until: gate)
        try second.occupy(until: gate)
        let group = LongThread.WorkGroup()
        let inGroup = Counter()
        let outside = Counter()
        for thread in [first, second] {
            for _ in 0..<50 {
                try thread.submit(group: group) { inGroup.increment() }
                try thread.perform { outside.increment() }
            }
        }
        #expect(group.count == 100)
        #expect(group.cancelAll() == 100)
        #expect(group.count == 0)
        #expect(group.cancelAll() == 0)
        gate.countDown()
        try first.perform(waitUntilDone: true) {}
        try second.perform(waitUntilDone: true) {}
        #expect(inGroup.value == 0)
        #expect(outside.value == 100)
    }

    @Test("a caller blocked on work in a group is told .cancelled when the group takes it back")
    func groupCancelsWaiter() throws {
        let thread = try LongThread(name: "lt-group-wait")
        defer { thread.stop() }
        let gate = Latch()
        try thread.occupy(until: gate)
        let group = LongThread.WorkGroup()
        let ran = Counter()
        let outcomes = Recorder<String>()
        let done = Latch(count: 2)
        Thread {
            do {
                try thread.perform(waitUntilDone: true, timeout: .seconds(30), group: group) { ran.increment() }
                outcomes.record("ran")
            } catch {
                outcomes.record("\(error)")
            }
            done.countDown()
        }.start()
        Thread {
            do {
                outcomes.record("\(try thread.sync(timeout: .seconds(30), group: group) { ran.increment() })")
            } catch {
                outcomes.record("\(error)")
            }
            done.countDown()
        }.start()
        #expect(waitUntil { group.count == 2 })
        #expect(group.cancelAll() == 2)
        #expect(done.wait())
        #expect(outcomes.events == Array(repeating: "\(LongThreadError.cancelled)", count: 2))
        gate.countDown()
        try thread.perform(waitUntilDone: true) {}
        #expect(ran.value == 0)
    }

    @Test("a group does not grow: items leave it when they run")
    func groupShrinks() throws {
        let thread = try LongThread(name: "lt-group-run")
        defer { thread.stop() }
        let group = LongThread.WorkGroup()
        for _ in 0..<1_000 { try thread.submit(group: group) {} }
        try thread.perform(waitUntilDone: true) {}
        #expect(waitUntil { group.count == 0 })
        #expect(group.cancelAll() == 0)
    }

    @Test("WorkGroup.count after cancelAll() still counts the group's item that is running, until it ends")
    func countAfterCancelAllWhileRunning() throws {
        let thread = try LongThread(name: "lt-group-count")
        defer { thread.stop() }
        let group = LongThread.WorkGroup()
        let started = Latch()
        let gate = Latch()
        let running = try thread.submit(group: group) {
            started.countDown()
            gate.wait()
        }
        let waiting = try thread.submit(group: group) {}
        #expect(started.wait())
        #expect(group.count == 2)
        #expect(group.cancelAll() == 1)
        #expect(waiting.state == .cancelled)
        #expect(running.state == .running)
        #expect(group.count == 1, "the running item has not ended")
        gate.countDown()
        #expect(waitUntil { group.count == 0 })
        #expect(running.state == .finished)
    }

    @Test("delayed work joins a group: cancelAll() takes back perform(after:) and perform(at:), timers and closures at once")
    func delayedWorkInAGroup() throws {
        let thread = try LongThread(name: "lt-group-delayed")
        defer { thread.stop() }
        let group = LongThread.WorkGroup()
        let ran = Counter()
        var canary: Canary? = Canary()
        let watch = WeakBox(canary!)
        // Far deadlines: a stall of the machine between the posts and the checks changes nothing.
        let timer = try thread.perform(after: .seconds(3600), group: group) { [canary] in
            canary?.touch()
            ran.increment()
        }
        let item = try thread.perform(at: .now + .seconds(3600), group: group) { [canary] in
            canary?.touch()
            ran.increment()
        }
        canary = nil
        let other = LongThread.WorkGroup()
        try thread.perform(after: .seconds(3600), group: other) {}
        #expect(group.count == 2)
        #expect(thread.statistics.pendingTimers == 3)
        #expect(group.cancelAll() == 2)
        #expect(group.count == 0)
        #expect(item.state == .cancelled)
        #expect(timer.isCancelled)
        #expect(watch.value == nil, "both closures released by cancelAll()")
        #expect(thread.statistics.pendingTimers == 1, "their timers too; the other group's stays")
        #expect(other.count == 1)
        // A later timer, posted after the checks, still runs; the cancelled work never does.
        let later = Latch()
        try thread.perform(after: .milliseconds(1), group: other) { later.countDown() }
        #expect(later.wait(), "a later timer of another group runs")
        #expect(ran.value == 0)
        #expect(waitUntil { other.count == 1 })
        #expect(other.cancelAll() == 1)
    }

    @Test("a grouped perform(after:) that runs, or whose timer is cancelled, leaves its group")
    func delayedWorkLeavesItsGroup() throws {
        let thread = try LongThread(name: "lt-group-delayed-end")
        defer { thread.stop() }
        let group = LongThread.WorkGroup()
        let ran = Latch()
        try thread.perform(after: .milliseconds(1), group: group) { ran.countDown() }
        let cancelled = try thread.perform(after: .seconds(3600), group: group) {}
        #expect(ran.wait())
        #expect(waitUntil { group.count == 1 })
        cancelled.cancel()
        #expect(group.count == 0)
        #expect(thread.statistics.pendingTimers == 0)
        #expect(group.cancelAll() == 0)
    }

    @Test("a discarding stop marks a waiting item discarded; submit after a stop throws .stopped")
    func discardedByStop() throws {
        let thread = try LongThread(name: "lt-cancel-stop")
        let gate = Latch()
        try thread.occupy(until: gate)
        let group = LongThread.WorkGroup()
        let item = try thread.submit(group: group) {}
        thread.stop(waitUntilDone: false, pending: .discard)
        #expect(item.state == .discarded)
        #expect(!item.cancel())
        #expect(group.count == 0)
        gate.countDown()
        #expect(thread.waitUntilExit(timeout: .seconds(10)))
        #expect(throws: LongThreadError.stopped) { try thread.submit(group: group) {} }
        #expect(group.count == 0)
    }
}

/// A value guarded by a lock, for test threads.
final class Locked2<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value
    init(_ value: Value) { self.value = value }
    func withLock<R>(_ body: (inout Value) -> R) -> R {
        lock.lock()
        defer { lock.unlock() }
        return body(&value)
    }
}
