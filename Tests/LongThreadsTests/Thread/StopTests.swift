import Foundation
import LongThreads
import Testing

@Suite("Stopping a thread")
struct StopTests {
    @Test("stop returns once the thread has ended")
    func stopWaitsForTheEnd() throws {
        let thread = try LongThread(name: "lt-stop-end")
        let tid = try thread.kernelThreadID()
        weak let loop = try thread.sync { RunLoop.current }
        thread.stop()
        #expect(loop == nil) // released by the thread's exit, which stop waited for
        #expect(ProcessCensus.threadGone(tid))
        #expect(!thread.isRunning)
        #expect(thread.waitUntilExit(timeout: .zero))
    }

    @Test("work accepted before stop(pending: .drain) runs, in order, before the loop exits")
    func drain() throws {
        let thread = try LongThread(name: "lt-drain")
        let gate = Latch()
        let log = Recorder<Int>()
        try thread.perform { gate.wait() }
        for index in 0..<1000 { try thread.perform { log.record(index) } }
        let stopper = Thread { thread.stop(pending: .drain) }
        stopper.start()
        #expect(waitUntil { !thread.isRunning })
        #expect(throws: LongThreadError.stopped) { try thread.perform {} }
        gate.countDown()
        #expect(thread.waitUntilExit(timeout: .seconds(10)))
        #expect(log.events == Array(0..<1000))
    }

    @Test("stop(pending: .discard) drops queued work, tells every waiter, and releases the closures")
    func discard() async throws {
        let (thread, gate) = try occupiedThread(named: "lt-discard")
        weak var weakTracked: Tracked?
        let trackedBox = WeakBox(nil)
        let ran = Counter()
        do {
            let tracked = Tracked()
            weakTracked = tracked
            trackedBox.value = tracked
            for _ in 0..<100 { try thread.perform { _ = tracked; ran.increment() } }
        }
        let waiterResults = Recorder<String>()
        let waitersQueued = Latch(count: 2)
        let syncWaiter = Thread {
            waitersQueued.countDown()
            do { try thread.sync { ran.increment() }; waiterResults.record("ran") } catch {
                // Told only after the stop released every closure it dropped.
                waiterResults.record(trackedBox.value == nil ? "\(error)" : "\(error) before the drops were released")
            }
        }
        syncWaiter.start()
        let asyncWaiter = Task {
            waitersQueued.countDown()
            do { try await thread.run { ran.increment() }; waiterResults.record("ran") } catch {
                waiterResults.record(trackedBox.value == nil ? "\(error)" : "\(error) before the drops were released")
            }
        }
        #expect(await waitersQueued.value())
        // The waiters have started; wait until both items are queued behind the gate.
        #expect(await eventually { thread.statistics.pending == 102 })
        let stopper = Thread { thread.stop(waitUntilDone: true, pending: .discard) }
        stopper.start()
        #expect(await eventually { waiterResults.count == 2 })
        #expect(weakTracked == nil)
        gate.countDown()
        #expect(thread.waitUntilExitBlocking(timeout: .seconds(10)))
        _ = await asyncWaiter.value
        #expect(ran.value == 0)
        let discarded = "\(LongThreadError.discarded)"
        #expect(waiterResults.events == [discarded, discarded])
    }

    @Test("a stop's delayed-work waiters are told only after the queue's drops were released")
    func discardTellsTimersLast() async throws {
        let (thread, gate) = try occupiedThread(named: "lt-discard-timer")
        let trackedBox = WeakBox(nil)
        do {
            let tracked = Tracked()
            trackedBox.value = tracked
            for _ in 0..<1_000 { try thread.perform { _ = tracked } }
        }
        let delayed = Task { () -> String in
            do {
                try await thread.run(at: .now + .seconds(600)) {}
                return "ran"
            } catch {
                return trackedBox.value == nil ? "\(error)" : "\(error) before the drops were released"
            }
        }
        #expect(await eventually { thread.statistics.pendingTimers == 1 })
        let stopper = Thread { thread.stop(waitUntilDone: true, pending: .discard) }
        stopper.start()
        let outcome = await delayed.value
        gate.countDown()
        #expect(thread.waitUntilExitBlocking(timeout: .seconds(10)))
        #expect(outcome == "\(LongThreadError.discarded)")
    }

    @Test("a waiter told by a discarding stop finds the closures of work queued after it released too")
    func discardReleasesBeforeTellingAnyWaiter() async throws {
        let (thread, gate) = try occupiedThread(named: "lt-discard-waiters")
        let trackedBox = WeakBox(nil)
        let outcome = Recorder<String>()
        let waiter = Thread {
            do { try thread.sync {}; outcome.record("ran") } catch {
                outcome.record(trackedBox.value == nil ? "\(error)" : "\(error) while a dropped closure lived")
            }
        }
        waiter.start()
        #expect(await eventually { thread.statistics.pending == 1 })
        // Behind the waiter: submitted work, which only the queue holds (a `submit` caller keeps
        // just the handle), each with someone who may be told (`QueuedWork`).
        var handles: [LongThread.QueuedWork] = []
        do {
            let tracked = Tracked()
            trackedBox.value = tracked
            for _ in 0..<5_000 { handles.append(try thread.submit { _ = tracked }) }
        }
        #expect(await eventually { thread.statistics.pending == 5_001 })
        let stopper = Thread { thread.stop(waitUntilDone: true, pending: .discard) }
        stopper.start()
        #expect(await eventually { outcome.count == 1 })
        gate.countDown()
        #expect(thread.waitUntilExitBlocking(timeout: .seconds(10)))
        #expect(outcome.events == ["\(LongThreadError.discarded)"])
        #expect(handles.allSatisfy { $0.state == .discarded })
    }

    @Test("a discard request cuts a draining stop short")
    func discardAfterDrain() throws {
        let thread = try LongThread(name: "lt-drain-discard")
        let gate = Latch()
        let ran = Counter()
        try thread.perform { gate.wait() }
        for _ in 0..<100 { try thread.perform { ran.increment() } }
        thread.stop(waitUntilDone: false, pending: .drain)
        thread.stop(waitUntilDone: false, pending: .discard)
        gate.countDown()
        thread.stop()
        #expect(ran.value == 0)
    }

    @Test("stop is idempotent and safe from many threads at once; every caller returns after the end")
    func concurrentStops() throws {
        for round in 0..<20 {
            let thread = try LongThread(name: "lt-multistop")
            let tid = try thread.kernelThreadID()
            let loop = WeakBox(try thread.sync { RunLoop.current })
            try thread.perform { usleep(UInt32(round % 3) * 1000) }
            let ended = Recorder<Bool>()
            let done = Latch(count: 4)
            for index in 0..<4 {
                Thread {
                    thread.stop(pending: index.isMultiple(of: 2) ? .drain : .discard)
                    // The thread's exit released its loop before any stop returned.
                    ended.record(loop.value == nil && !thread.isRunning)
                    done.countDown()
                }.start()
            }
            #expect(done.wait())
            #expect(ended.events == [true, true, true, true])
            #expect(ProcessCensus.threadGone(tid))
        }
    }

    @Test("a stop right after init is never lost")
    func stopRightAfterStart() throws {
        for _ in 0..<200 {
            let thread = try LongThread(name: "lt-quickstop")
            thread.stop()
            #expect(!thread.isRunning)
        }
    }

    @Test("stop from inside a task requests the stop and returns; the thread ends after that task")
    func stopFromInside() throws {
        let thread = try LongThread(name: "lt-inside")
        let tid = try thread.kernelThreadID()
        let log = Recorder<String>()
        try thread.perform { log.record("before") }
        try thread.sync {
            thread.stop()
            log.record("stop returned")
            #expect(!thread.isRunning)
            #expect(throws: LongThreadError.stopped) { try thread.perform {} }
        }
        #expect(thread.waitUntilExit(timeout: .seconds(10)))
        #expect(ProcessCensus.threadGone(tid))
        #expect(log.events == ["before", "stop returned"])
    }

    @Test("waitUntilExit with a timeout returns false while the thread still runs")
    func waitWithTimeout() throws {
        let thread = try LongThread(name: "lt-timeout")
        defer { thread.stop() }
        #expect(!thread.waitUntilExit(timeout: .milliseconds(20)))
        #expect(try thread.sync { thread.waitUntilExit(timeout: .seconds(1)) } == false)
    }

    @Test("awaiting the end suspends every waiter until the thread has ended and been joined", .timeLimit(.minutes(1)))
    func awaitExit() async throws {
        let thread = try LongThread(name: "lt-await-exit")
        let tid = try thread.kernelThreadID()
        let gate = Latch()
        try thread.perform { gate.wait() }
        // More waiters than the pool has threads: a waiter that blocked one would starve the rest.
        let waiters = (0..<8).map { _ in Task { await thread.waitUntilExit() } }
        #expect(await Task { 42 }.value == 42) // the pool still runs other work meanwhile
        #expect(thread.isRunning)
        thread.stop(waitUntilDone: false)
        gate.countDown()
        for waiter in waiters { #expect(await waiter.value) }
        #expect(thread.waitUntilExitBlocking(timeout: .zero)) // joined already: returns at once
        #expect(ProcessCensus.threadGone(tid))
        #expect(await thread.waitUntilExit()) // after the end: at once
    }

    @Test("awaiting the end from the thread's own work returns false at once")
    func awaitExitOnTheThread() async throws {
        let thread = try LongThread(name: "lt-await-exit-self")
        defer { thread.stopAtTestEnd() }
        let result = await withTaskExecutorPreference(thread) { await thread.waitUntilExit() }
        #expect(!result)
        #expect(thread.isRunning)
    }

    @Test("a draining stop runs work waiting for another mode in that mode")
    func drainRunsOtherModes() throws {
        let thread = try LongThread(name: "lt-drain-modes")
        let tracking = RunLoop.Mode("tracking")
        let log = Recorder<String>()
        try thread.perform(modes: [tracking]) { log.record("tracking: \(RunLoop.current.currentMode?.rawValue ?? "none")") }
        try thread.perform { log.record("default") }
        try thread.sync {}
        thread.stop(pending: .drain)
        #expect(log.events == ["default", "tracking: tracking"])
    }

    /// A new thread, busy with an item that waits for the returned gate.
    private func occupiedThread(named name: String) throws -> (LongThread, Latch) {
        let thread = try LongThread(name: name)
        let gate = Latch()
        try thread.occupy(until: gate)
        return (thread, gate)
    }
}
