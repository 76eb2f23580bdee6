import CLongThreadsShims
import Foundation
import LongThreads
import LongThreadsTestSupport
import Testing

/// An actor pinned to a thread, whose method awaits that thread's stop from the thread itself.
private actor PinnedStopper {
    let thread: LongThread
    nonisolated var unownedExecutor: UnownedSerialExecutor { thread.asUnownedSerialExecutor() }
    init(thread: LongThread) { self.thread = thread }

    /// Whether the method went on after the stop, and where.
    func stopFromTheThread() async -> (ranOnTheThread: Bool, threadEnded: Bool, wentOnOnTheThread: Bool) {
        let ranOnTheThread = LongThread.current === thread
        await thread.stop()
        return (ranOnTheThread, !thread.isRunning, LongThread.current === thread)
    }
}

@Suite("Stopping a thread from async code")
struct AsyncStopTests {
    @Test("await stop() drains, then returns once the thread has ended and been joined")
    func drainsAndJoins() async throws {
        let tornDown = Counter()
        let thread = try LongThread(name: "lt-astop", options: .init(tearDown: { tornDown.increment() }))
        let tid = try await thread.run { CLongThreadsShims_gettid() }
        let gate = Latch()
        let ran = Recorder<Int>()
        try thread.perform { gate.wait() }
        for index in 0..<100 { try thread.perform { ran.record(index) } }
        async let stopped: Void = thread.stop()
        #expect(await eventually { !thread.isRunning })   // the stop has begun: posts are refused
        #expect(throws: LongThreadError.stopped) { try thread.perform {} }
        gate.countDown()
        await stopped
        #expect(ran.events == Array(0..<100))
        #expect(tornDown.value == 1)                       // tearDown ran before the join
        #expect(ProcessCensus.threadGone(tid))
        #expect(await thread.waitUntilExit())
    }

    @Test("await stop(pending: .discard) tells each waiter, then returns once the thread has ended")
    func discards() async throws {
        let thread = try LongThread(name: "lt-astop-discard")
        let gate = Latch()
        try await thread.block(until: gate)
        let waiter = Task { try await thread.run { 1 } }
        #expect(await eventually { thread.statistics.pending >= 1 })
        async let stopped: Void = thread.stop(pending: .discard)
        #expect(await eventually { !thread.isRunning })
        gate.countDown()
        await stopped
        await #expect(throws: LongThreadError.discarded) { try await waiter.value }
        #expect(await thread.waitUntilExit())
    }

    @Test("await stop() from an actor pinned to the thread does not wait on itself: the method goes on on the thread, which then drains and ends")
    func fromAPinnedActor() async throws {
        let thread = try LongThread(name: "lt-astop-self")
        let stopper = PinnedStopper(thread: thread)
        let outcome = await stopper.stopFromTheThread()    // returns: no deadlock
        #expect(outcome.ranOnTheThread)
        #expect(outcome.threadEnded)                       // the stop had begun
        #expect(outcome.wentOnOnTheThread)                 // not after the end, elsewhere
        #expect(await thread.waitUntilExit())
    }
}
