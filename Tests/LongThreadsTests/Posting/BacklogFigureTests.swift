import CLongThreadsShims
import Foundation
import LongThreads
import Testing

/// `statistics` and the instrument's figures while a backlog is worked through: the items taken
/// into the running batch still count as pending and as queue depth.
@Suite("Backlog figures")
struct BacklogFigureTests {
    @Test("pending counts the items taken into the running batch, to the item")
    func pendingIncludesBatch() throws {
        let thread = try LongThread(name: "lt-backlog")
        defer { thread.stop() }
        let gate = Latch()
        try thread.hold(until: gate)
        let count = 200
        let seen = Recorder<Int>()
        let ran = Latch(count: count)
        for _ in 0..<count {
            try thread.perform {
                seen.record(thread.statistics.pending)
                ran.countDown()
            }
        }
        #expect(thread.statistics.pending == count)
        gate.countDown()
        #expect(ran.wait()) // nothing else is posted meanwhile
        // The k-th item sees the count - k - 1 behind it, though all of them were taken at once.
        #expect(seen.events == (0..<count).map { count - $0 - 1 })
        #expect(thread.statistics.pending == 0)
    }

    @Test("the oldest waiting item's age, while posts are timed")
    func oldestPendingAge() throws {
        let events = EventRecorder()
        let thread = try LongThread(name: "lt-oldest", options: .init(instrument: events))
        defer { thread.stop() }
        #expect(thread.statistics.oldestPendingAge == nil)
        let gate = Latch()
        try thread.hold(until: gate)
        let beforePost = ContinuousClock.now
        try thread.perform {}
        usleep(20_000) // lets the item age
        let age = try #require(thread.statistics.oldestPendingAge)
        #expect(age >= .milliseconds(20))
        #expect(age <= beforePost.duration(to: .now))
        // Items in the batch count too: a blocker taken with the item holds it in the batch.
        let second = Latch()
        let secondStarted = Latch()
        try thread.perform { secondStarted.countDown(); second.wait() }
        try thread.perform {}
        gate.countDown()
        #expect(secondStarted.wait())
        let inBatch = try #require(thread.statistics.oldestPendingAge)
        #expect(inBatch > .zero)
        second.countDown()
        try thread.sync {}
        #expect(thread.statistics.oldestPendingAge == nil)
    }

    @Test("without an instrument or a monitor, posts are not timed")
    func untimedWithoutListener() throws {
        let thread = try LongThread(name: "lt-untimed")
        defer { thread.stop() }
        let gate = Latch()
        try thread.hold(until: gate)
        try thread.perform {}
        #expect(thread.statistics.pending == 1)
        #expect(thread.statistics.oldestPendingAge == nil)
        gate.countDown()
        try thread.sync {}
    }

    @Test("a batch's waited is the longest post-to-start wait of its items")
    func waitedIsPostToStart() throws {
        let events = EventRecorder()
        let thread = try LongThread(name: "lt-waited", options: .init(instrument: events))
        defer { thread.stop() }
        let gate = Latch()
        try thread.hold(until: gate)
        try thread.perform {}
        let posted = ContinuousClock.now // after the post's own stamp: the wait is at least `held`
        usleep(50_000) // the item waits behind the blocker at least this long
        let held = posted.duration(to: .now)
        gate.countDown()
        try thread.sync {}
        // The drain records its batch event when it ends, after the sync item returned: wait for it.
        // (The library reads CLOCK_MONOTONIC, ContinuousClock another clock: allow for their drift.)
        #expect(waitUntil { events.batches.contains { $0.waited >= held - .milliseconds(1) } },
                "batch waits: \(events.batches.map(\.waited)), held \(held)")
    }

    @Test("a batch's queue depth counts the batch's waiting items")
    func queueDepthIncludesBatch() throws {
        let events = EventRecorder()
        let thread = try LongThread(name: "lt-depth", options: .init(instrument: events))
        defer { thread.stop() }
        let gate = Latch()
        try thread.hold(until: gate)
        // 100 items of 2 ms: a pass runs about a millisecond of work (here one item: the clock is
        // read before each once items are slow), so the first pass ends with nearly all of them
        // still waiting in the batch (at least 68: a pass that read the clock only every 32 items, as
        // it does while items are quick, would still leave 68).
        for _ in 0..<100 { try thread.perform { usleep(2_000) } }
        gate.countDown()
        try thread.sync {}
        #expect(waitUntil { events.batches.contains { $0.queueDepth >= 68 } }, "depths: \(events.batches.map(\.queueDepth))")
    }
}

extension EventRecorder {
    /// The `batch` events heard, in order.
    fileprivate var batches: [(waited: Duration, queueDepth: Int)] {
        events.compactMap { event in
            if case .batch(_, _, _, let waited, let depth) = event { return (waited, depth) }
            return nil
        }
    }
}
