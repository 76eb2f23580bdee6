import Foundation
import LongThreads
import Testing

/// An actor pinned to a LongThread: the idiom the README shows.
actor Pinned {
    let thread: LongThread
    nonisolated var unownedExecutor: UnownedSerialExecutor { thread.asUnownedSerialExecutor() }
    // Deliberately a plain var: if two jobs ever ran at once, ThreadSanitizer would see it.
    private(set) var count = 0

    init(thread: LongThread) { self.thread = thread }

    /// Increments and reports whether it ran on the thread.
    func increment() -> (count: Int, onThread: Bool) {
        preconditionIsolated()
        count += 1
        return (count, LongThread.current === thread)
    }

    /// Where each leg of an async method ran, across suspensions.
    func legs(hoppingVia other: Plain) async -> [Bool] {
        var legs = [LongThread.current === thread]
        await Task.yield()
        legs.append(LongThread.current === thread)
        _ = await other.touch()
        legs.append(LongThread.current === thread)
        return legs
    }

    func record(_ event: String, in recorder: Recorder<String>) {
        recorder.record(event)
    }

    /// Synchronous code that assumes it runs isolated to this actor (`assumeIsolated` is
    /// unavailable from async contexts, as it should be).
    nonisolated func countAssumingIsolation() -> Int {
        assumeIsolated { $0.count }
    }
}

/// An actor on the default executor.
actor Plain {
    func touch() -> Bool { LongThread.current != nil }
}

@Suite("LongThread as an executor")
struct ExecutorTests {
    // MARK: - Pinned actors

    @Test("an actor pinned to a LongThread runs every method, and every leg of an async method, on that thread")
    func pinnedActorRunsOnThread() async throws {
        let thread = try LongThread(name: "lt-exec-pin")
        defer { thread.stopAtTestEnd() }
        let pinned = Pinned(thread: thread)
        for expected in 1...20 {
            let (count, onThread) = await pinned.increment()
            #expect(count == expected)
            #expect(onThread)
        }
        let legs = await pinned.legs(hoppingVia: Plain())
        #expect(legs == [true, true, true])
        #expect(await Plain().touch() == false)
    }

    @Test("actor jobs and perform work share one FIFO queue")
    func jobsInterleaveWithPerform() async throws {
        let thread = try LongThread(name: "lt-exec-fifo")
        defer { thread.stopAtTestEnd() }
        let pinned = Pinned(thread: thread)
        let log = Recorder<String>()
        var expected: [String] = []
        for index in 0..<50 {
            // Two fire-and-forget items, then an actor call: the job is queued behind them.
            try thread.perform { log.record("p\(index)a") }
            try thread.perform { log.record("p\(index)b") }
            await pinned.record("a\(index)", in: log)
            expected += ["p\(index)a", "p\(index)b", "a\(index)"]
        }
        #expect(log.events == expected)
    }

    @Test("jobs of many concurrent callers run one at a time on the thread")
    func concurrentCallersAreSerial() async throws {
        let thread = try LongThread(name: "lt-exec-many")
        defer { thread.stopAtTestEnd() }
        let pinned = Pinned(thread: thread)
        let allOnThread = await withTaskGroup(of: Bool.self) { group in
            for _ in 0..<200 { group.addTask { await pinned.increment().onThread } }
            return await group.reduce(true) { $0 && $1 }
        }
        #expect(allOnThread)
        #expect(await pinned.count == 200)
    }

    // MARK: - Isolation checks

    @Test("assumeIsolated and preconditionIsolated hold inside perform, sync and run work")
    func isolationHoldsInsidePerformWork() async throws {
        let thread = try LongThread(name: "lt-exec-iso")
        defer { thread.stopAtTestEnd() }
        let pinned = Pinned(thread: thread)
        _ = await pinned.increment()
        let viaSync = try thread.syncBlocking { pinned.assumeIsolated { $0.count } }
        #expect(viaSync == 1)
        let viaRun = try await thread.run {
            pinned.preconditionIsolated()
            return pinned.assumeIsolated { $0.count }
        }
        #expect(viaRun == 1)
        let done = Latch()
        let seen = Recorder<Int>()
        try thread.perform {
            seen.record(pinned.assumeIsolated { $0.count })
            done.countDown()
        }
        #expect(done.wait())
        #expect(seen.events == [1])
    }

    @Test("isIsolatingCurrentContext is true on the thread and false elsewhere (the check, without a crash)")
    func isolationCheckAnswers() async throws {
        let thread = try LongThread(name: "lt-exec-ask")
        defer { thread.stopAtTestEnd() }
        #expect(thread.isIsolatingCurrentContext() == false)
        #expect(try thread.syncBlocking { thread.isIsolatingCurrentContext() } == true)
        let other = try LongThread(name: "lt-exec-ask2")
        defer { other.stopAtTestEnd() }
        #expect(try other.syncBlocking { thread.isIsolatingCurrentContext() } == false)
    }

    @Test("assumeIsolated of a pinned actor traps off the thread")
    func assumeIsolatedTrapsElsewhere() async throws {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let thread = try! LongThread(name: "lt-exec-trap")
            let pinned = Pinned(thread: thread)
            _ = pinned.countAssumingIsolation()
        }
        // isIsolatingCurrentContext() said false, so the runtime traps with its own message.
        let message = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(message.contains("Incorrect actor executor assumption"))
    }

    @Test("checkIsolated traps on another LongThread, naming both threads")
    func checkIsolatedTrapsOnAnotherThread() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let thread = try! LongThread(name: "lt-exec-trap1")
            let other = try! LongThread(name: "lt-exec-trap2")
            try! other.syncBlocking { thread.checkIsolated() }
        }
        let message = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(message.contains("BUG DETECTED"))
        #expect(message.contains("\"lt-exec-trap1\""))
        #expect(message.contains("\"lt-exec-trap2\""))
    }

    // MARK: - Task executor preference

    @Test("withTaskExecutorPreference runs the body and its child tasks on the thread")
    func taskExecutorPreference() async throws {
        let thread = try LongThread(name: "lt-exec-pref")
        defer { thread.stopAtTestEnd() }
        let (body, children, asyncLet) = await withTaskExecutorPreference(thread) {
            let body = LongThread.current === thread
            let children = await withTaskGroup(of: Bool.self) { group in
                for _ in 0..<16 { group.addTask { LongThread.current === thread } }
                return await group.reduce(true) { $0 && $1 }
            }
            async let child = LongThread.current === thread
            return (body, children, await child)
        }
        #expect(body)
        #expect(children)
        #expect(asyncLet)
    }

    // MARK: - run cancellation

    @Test("run: a task cancelled before its work started skips the work and throws CancellationError")
    func runCancelledBeforeStart() async throws {
        let thread = try LongThread(name: "lt-exec-cancel")
        defer { thread.stopAtTestEnd() }
        let gate = Latch()
        let blocked = Latch()
        try thread.perform {
            blocked.countDown()
            gate.wait()
        }
        #expect(await blocked.value())
        let ran = Counter()
        let task = Task { try await thread.run { ran.increment() } }
        #expect(await eventually { thread.statistics.pending >= 1 })
        task.cancel()
        await #expect(throws: CancellationError.self) { try await task.value }
        gate.countDown()
        try await thread.run {}
        #expect(ran.value == 0)
    }

    @Test("run: once started, the work completes despite cancellation")
    func runCancelledAfterStart() async throws {
        let thread = try LongThread(name: "lt-exec-cancel2")
        defer { thread.stopAtTestEnd() }
        let started = Latch()
        let gate = Latch()
        let task = Task {
            try await thread.run { () -> Int in
                started.countDown()
                gate.wait()
                return 7
            }
        }
        #expect(await started.value())
        task.cancel()
        gate.countDown()
        #expect(try await task.value == 7)
    }

    // MARK: - After stop

    @Test("a job accepted before a draining stop runs on the thread, as part of the drain")
    func jobAcceptedBeforeDrainRunsOnThread() async throws {
        let thread = try LongThread(name: "lt-exec-drain")
        let pinned = Pinned(thread: thread)
        let gate = Latch()
        let blocked = Latch()
        try thread.perform {
            blocked.countDown()
            _ = gate.wait(timeout: .seconds(600)) // outlasts any stall: the test opens it
        }
        // The blocker is running, so `pending` counts only what queues behind it.
        #expect(await blocked.value())
        // Preferring the thread: the call is queued as the task is made, before the stop's end.
        let call = Task(executorPreference: thread) { await pinned.increment().onThread }
        #expect(await eventually { thread.statistics.pending >= 1 })
        thread.stop(waitUntilDone: false)
        gate.countDown()
        #expect(await call.value)
        #expect(await Latch.exit(of: thread))
    }

    @Test("after the thread ended, a call to a pinned actor traps naming the thread; it runs on no other thread")
    func jobsAfterEndTrap() async throws {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent, \.standardOutputContent]) {
            let thread = try! LongThread(name: "lt-exec-after")
            let pinned = Pinned(thread: thread)
            _ = await pinned.increment()
            await thread.stop()
            let results = await withTaskGroup(of: (count: Int, onThread: Bool).self) { group in
                for _ in 0..<100 { group.addTask { await pinned.increment() } }
                return await group.reduce(into: []) { $0.append($1) }
            }
            print("ran \(results.count)")
        }
        let output = String(decoding: result?.standardOutputContent ?? [], as: UTF8.self)
        #expect(!output.contains("ran"))
        let message = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(message.contains("BUG DETECTED: a job for LongThread \"lt-exec-after\""))
    }

    @Test("a discarding stop does not drop queued jobs: they run on the thread after the running item")
    func discardingStopRunsJobsOnThread() async throws {
        let thread = try LongThread(name: "lt-exec-discard")
        let pinned = Pinned(thread: thread)
        let gate = Latch()
        let blockerDone = Latch()
        let blocked = Latch()
        try thread.perform {
            blocked.countDown()
            _ = gate.wait(timeout: .seconds(600)) // outlasts any stall: the test opens it
            blockerDone.countDown()
        }
        #expect(await blocked.value())
        let calls = (0..<10).map { _ in
            Task(executorPreference: thread) { () -> (count: Int, onThread: Bool, afterBlocker: Bool) in
                let (count, onThread) = await pinned.increment()
                return (count, onThread, blockerDone.isOpen)
            }
        }
        #expect(await eventually { thread.statistics.pending >= 10 })
        thread.stop(waitUntilDone: false, pending: .discard)
        gate.countDown()
        var counts: [Int] = []
        for call in calls {
            let (count, onThread, afterBlocker) = await call.value
            #expect(onThread)
            #expect(afterBlocker)
            counts.append(count)
        }
        // Every call ran once (the actor's count, read from its calls: after the end it traps).
        #expect(counts.sorted() == Array(1...10))
        #expect(await Latch.exit(of: thread))
    }
}

extension Latch {
    /// Waits off the cooperative pool until `thread` has ended.
    static func exit(of thread: LongThread, timeout: Duration = .seconds(10)) async -> Bool {
        await withCheckedContinuation { continuation in
            Thread { continuation.resume(returning: thread.waitUntilExit(timeout: timeout)) }.start()
        }
    }
}
