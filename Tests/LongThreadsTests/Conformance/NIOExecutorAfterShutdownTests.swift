import Foundation
import LongThreads
import LongThreadsTestSupport
import Testing

/// An actor pinned to a thread, as NIO's `EventLoopBoundActor` is to its loop
/// (Tests/NIOPosixTests/SerialExecutorTests.swift).
private actor LoopBoundActor {
    let thread: LongThread
    nonisolated var unownedExecutor: UnownedSerialExecutor { thread.asUnownedSerialExecutor() }
    private(set) var counter = 0

    init(thread: LongThread) { self.thread = thread }

    func increment() -> (count: Int, onThread: Bool) {
        counter += 1
        return (counter, thread.isCurrent)
    }

    func isOnThread(_ other: LongThread) -> Bool { other.isCurrent }

    func record(_ event: String, in recorder: Recorder<String>) { recorder.record(event) }

    nonisolated func assumeInLoop() -> Int { assumeIsolated { $0.counter } }

    /// Records where it ran, then starts a task isolated to this actor (its first job is queued on
    /// the thread at once, by this job) that does the same, `left` more times.
    func chain(_ left: Int, log: Recorder<Bool>) {
        log.record(thread.isCurrent)
        guard left > 0 else { return }
        Task { self.chain(left - 1, log: log) }
    }
}

/// SwiftNIO's executor cases, and its rule for a loop that shuts down: tasks that reach the loop
/// while it shuts down run on it (`SelectableEventLoop.run`'s last rounds run every immediate task
/// until the queue quiesces); a task scheduled once it has shut down is never run elsewhere (NIO
/// logs "Cannot schedule tasks on an EventLoop that has already shut down" and drops it; its strict
/// mode, `SWIFTNIO_STRICT`, traps). Here it always traps: a dropped job would hang its caller.
@Suite("Conformance: NIO executor after shutdown")
struct NIOExecutorAfterShutdownTests {
    @Test("NIO SerialExecutorTests.testBasicExecutorFitsOnEventLoop: an actor runs on its loop, not on another")
    func basicExecutorFitsOnEventLoop() async throws {
        let thread1 = try LongThread(name: "nio-exec-1")
        let thread2 = try LongThread(name: "nio-exec-2")
        defer { thread1.stopAtTestEnd(); thread2.stopAtTestEnd() }
        let actor = LoopBoundActor(thread: thread1)
        #expect(await actor.isOnThread(thread1))
        #expect(await !actor.isOnThread(thread2))
    }

    @Test("NIO SerialExecutorTests.testAssumeIsolation: work submitted to the loop may assume the actor's isolation")
    func assumeIsolation() async throws {
        let thread = try LongThread(name: "nio-exec-assume")
        defer { thread.stopAtTestEnd() }
        let actor = LoopBoundActor(thread: thread)
        #expect(try await thread.run { actor.assumeInLoop() } == 0)
    }

    @Test("NIO SelectableEventLoop.run (quiesce) and EventLoopTest.testSchedulingTaskOnFutureFailedByELShutdownDoesNotMakeUsExplode: jobs enqueued while the thread drains run on it")
    func jobsEnqueuedWhileDrainingRunOnTheThread() async throws {
        let thread = try LongThread(name: "nio-exec-drain")
        let actor = LoopBoundActor(thread: thread)
        let gate = Latch()
        try await thread.blockForStop(until: gate)
        thread.stop(waitUntilDone: false)
        #expect(!thread.isRunning)                                   // the stop has begun
        // Preferring the thread, each task's first job is queued on it as the task is made: no
        // call can reach the thread after its end, however slow the cooperative pool is.
        let calls = (0..<50).map { _ in Task(executorPreference: thread) { await actor.increment() } }
        #expect(await eventually { thread.statistics.pending >= 50 })
        gate.countDown()
        var counts: [Int] = []
        for call in calls {
            let (count, onThread) = await call.value
            #expect(onThread)
            counts.append(count)
        }
        #expect(Set(counts) == Set(1...50))
        #expect(await Latch.exit(of: thread))
    }

    @Test("NIO SelectableEventLoop.run (quiesce: rounds until no task is left): jobs that jobs enqueue while the thread drains run on it, round after round")
    func jobsBroughtByJobsRunOnTheThread() async throws {
        let thread = try LongThread(name: "nio-exec-rounds")
        let actor = LoopBoundActor(thread: thread)
        let log = Recorder<Bool>()
        let gate = Latch()
        try await thread.blockForStop(until: gate)
        let call = Task(executorPreference: thread) { await actor.chain(20, log: log) }
        #expect(await eventually { thread.statistics.pending >= 1 })
        thread.stop(waitUntilDone: false, pending: .discard)
        gate.countDown()
        await call.value
        #expect(await Latch.exit(of: thread))
        #expect(log.events == Array(repeating: true, count: 21))
    }

    @Test("NIO EventLoopTest.testWeFailOutstandingScheduledTasksOnELShutdown, for jobs: a discarding stop fails waiting work but runs queued jobs on the thread")
    func discardingStopRunsQueuedJobsOnTheThread() async throws {
        let thread = try LongThread(name: "nio-exec-discard")
        let actor = LoopBoundActor(thread: thread)
        let gate = Latch()
        try await thread.blockForStop(until: gate)
        let waiter = Task { try await thread.run { 1 } }
        #expect(await eventually { thread.statistics.pending >= 1 })
        let calls = (0..<10).map { _ in Task(executorPreference: thread) { await actor.increment().onThread } }
        #expect(await eventually { thread.statistics.pending >= 11 })
        thread.stop(waitUntilDone: false, pending: .discard)
        gate.countDown()
        await #expect(throws: LongThreadError.discarded) { try await waiter.value }
        for call in calls { #expect(await call.value) }
        #expect(await Latch.exit(of: thread))
    }

    @Test("jobs that reach the thread while it stops run before its bound values are destroyed and tearDown runs")
    func jobsRunBeforeTeardown() async throws {
        let log = Recorder<String>()
        let thread = try LongThread(name: "nio-exec-order", options: .init(tearDown: { log.record("tearDown") }))
        let bound = try await ThreadBound(on: thread) { DeinitRecorder { log.record("bound value destroyed") } }
        let actor = LoopBoundActor(thread: thread)
        let gate = Latch()
        try await thread.blockForStop(until: gate)
        thread.stop(waitUntilDone: false, pending: .discard)
        let call = Task(executorPreference: thread) { await actor.record("job", in: log) }
        #expect(await eventually { thread.statistics.pending >= 1 })
        gate.countDown()
        await call.value
        #expect(await Latch.exit(of: thread))
        #expect(log.events == ["job", "bound value destroyed", "tearDown"])
        withExtendedLifetime(bound) {}
    }

    @Test("NIO SelectableEventLoop._schedule0 after shutdown (strict mode): a call to a pinned actor after the thread ended traps, naming the thread, and runs nowhere")
    func jobAfterTheEndTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent, \.standardOutputContent]) {
            let thread = try! LongThread(name: "nio-exec-late")
            let actor = LoopBoundActor(thread: thread)
            _ = await actor.increment()
            await thread.stop()
            FileHandle.standardOutput.write(Data(("ended" + "\n").utf8)) // unbuffered: a trap flushes nothing
            let ran = await actor.increment()
            print("ran: \(ran)")
        }
        let output = String(decoding: result?.standardOutputContent ?? [], as: UTF8.self)
        let message = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(output.contains("ended"))
        #expect(!output.contains("ran:"))
        #expect(message.contains("BUG DETECTED: a job for LongThread \"nio-exec-late\""))
        #expect(message.contains("arrived after the thread ended"))
    }

    @Test("a task preferring the thread as its executor traps too when it comes back after the thread ended")
    func taskPreferenceAfterTheEndTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent, \.standardOutputContent]) {
            let thread = try! LongThread(name: "nio-exec-late-task")
            await thread.stop()
            FileHandle.standardOutput.write(Data(("ended" + "\n").utf8)) // unbuffered: a trap flushes nothing
            await Task(executorPreference: thread) { print("ran") }.value
        }
        let output = String(decoding: result?.standardOutputContent ?? [], as: UTF8.self)
        let message = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(output.contains("ended"))
        #expect(!output.contains("ran"))
        #expect(message.contains("BUG DETECTED: a job for LongThread \"nio-exec-late-task\""))
    }

    @Test("the actor's init and non-isolated deinit run on the caller's thread, not on the pinned one")
    func initAndDeinitRunOnTheCaller() async throws {
        let thread = try LongThread(name: "nio-exec-lifecycle")
        defer { thread.stopAtTestEnd() }
        let log = Recorder<Bool>()
        let made = try await offThePool { () -> Bool in
            let actor = LifecycleProbe(thread: thread) { log.record($0) }
            _ = actor
            return true
        }
        #expect(made)
        #expect(log.events == [false, false])               // init, then deinit: both off the thread
    }
}

private final class DeinitRecorder {
    let onDeinit: () -> Void
    init(_ onDeinit: @escaping () -> Void) { self.onDeinit = onDeinit }
    deinit { onDeinit() }
}

/// Records whether its init and deinit ran on its thread.
private actor LifecycleProbe {
    let thread: LongThread
    let report: @Sendable (Bool) -> Void
    nonisolated var unownedExecutor: UnownedSerialExecutor { thread.asUnownedSerialExecutor() }

    init(thread: LongThread, report: @escaping @Sendable (Bool) -> Void) {
        self.thread = thread
        self.report = report
        report(thread.isCurrent)
    }

    deinit { report(thread.isCurrent) }
}
