import Foundation
import LongThreads
import Testing

/// Misuse that could crash, hang or break a promise: each gets a thrown error.
@Suite("Misuse", .timeLimit(.minutes(1)))
struct MisuseTests {
    @Test("addCommonMode(.common) is refused, even with common-mode items present")
    func commonAsCommonMode() throws {
        let thread = try LongThread(name: "lt-common-common")
        defer { thread.stop() }
        let observer = try thread.addObserver(for: [.beforeWaiting]) { _ in } // in .common
        defer { observer.cancel() }
        #expect(throws: LongThreadError.invalidMode(.common)) { try thread.addCommonMode(.common) }
        try thread.sync {} // the thread still serves
    }

    @Test("a mode name with NUL is refused wherever a mode enters, and a draining stop still ends")
    func nulInModeName() throws {
        let thread = try LongThread(name: "lt-nul-mode")
        let bad = RunLoop.Mode("track\0ing")
        #expect(throws: LongThreadError.invalidMode(bad)) { try thread.perform(modes: [bad]) {} }
        #expect(throws: LongThreadError.invalidMode(bad)) { try thread.perform(waitUntilDone: true, modes: [bad]) {} }
        #expect(throws: LongThreadError.invalidMode(bad)) { try thread.perform(after: .seconds(1), modes: [bad]) {} }
        #expect(throws: LongThreadError.invalidMode(bad)) { try thread.addObserver(for: [.entry], modes: [bad]) { _ in } }
        #expect(throws: LongThreadError.invalidMode(bad)) { try thread.addCommonMode(bad) }
        let nested = try thread.sync { () -> LongThreadError? in
            do { _ = try thread.runNested(in: bad, until: .now + .seconds(1)) } catch { return error as? LongThreadError }
            return nil
        }
        #expect(nested == .invalidMode(bad))
        let stopped = Latch()
        Thread { thread.stop(); stopped.countDown() }.start()
        #expect(stopped.wait())
    }

    @Test("runNested(in: .common) is refused at once instead of spinning to its deadline")
    func nestedRunInCommonModes() throws {
        let thread = try LongThread(name: "lt-nested-common")
        defer { thread.stop() }
        let clock = ContinuousClock()
        let start = clock.now
        let outcome = try thread.sync { () -> LongThreadError? in
            do { _ = try thread.runNested(in: .common, until: .now + .seconds(2)) } catch { return error as? LongThreadError }
            return nil
        }
        #expect(outcome == .invalidMode(.common))
        #expect(clock.now - start < .seconds(1))
    }

    @Test("sync, perform(waitUntilDone:) and run on the thread itself throw .stopped once a stop began")
    func inlineWaitsAfterStop() throws {
        let thread = try LongThread(name: "lt-inline-stop")
        let outcomes = Recorder<String>()
        let done = Latch()
        try thread.perform {
            thread.stop(waitUntilDone: false)
            do { try thread.sync { outcomes.record("sync ran") } } catch { outcomes.record("sync: \(error)") }
            do { try thread.perform(waitUntilDone: true) { outcomes.record("perform ran") } } catch {
                outcomes.record("perform: \(error)")
            }
            done.countDown()
        }
        #expect(done.wait())
        let stopped = String(describing: LongThreadError.stopped)
        #expect(outcomes.events == ["sync: \(stopped)", "perform: \(stopped)"])
        #expect(thread.waitUntilExit(timeout: .seconds(10)))
    }

    /// Every spelling that waits for its work, called on the thread itself: it would run the work
    /// inline, so each must apply the one rule (`.stopped` once a stop began) before it does.
    private static let blockingSpellings: [(name: String, call: @Sendable (LongThread, @escaping @Sendable () -> Void) throws -> Void)] = [
        ("sync", { thread, work in try thread.sync { work() } }),
        ("sync(modes:)", { thread, work in try thread.sync(modes: [.default]) { work() } }),
        ("sync(timeout:)", { thread, work in try thread.sync(timeout: .seconds(5)) { work() } }),
        ("perform(waitUntilDone:)", { thread, work in try thread.perform(waitUntilDone: true, work) }),
        ("perform(waitUntilDone:modes:)", { thread, work in try thread.perform(waitUntilDone: true, modes: [.default], work) }),
        ("perform(waitUntilDone:timeout:)", { thread, work in try thread.perform(waitUntilDone: true, timeout: .seconds(5), work) }),
        ("perform(onThread:waitUntilDone:)", { thread, work in try perform(onThread: thread, waitUntilDone: true, work) }),
    ]

    @Test("every blocking spelling called on the thread throws .stopped once a stop began, and runs nothing",
          arguments: blockingSpellings.indices)
    func everyBlockingSpellingAfterStop(_ index: Int) throws {
        let (name, call) = Self.blockingSpellings[index]
        let thread = try LongThread(name: "lt-inline-spellings")
        let outcome = Recorder<String>()
        let done = Latch()
        try thread.perform {
            thread.stop(waitUntilDone: false)
            do {
                try call(thread) { outcome.record("ran") }
                outcome.record("returned")
            } catch {
                outcome.record("\(error)")
            }
            done.countDown()
        }
        #expect(done.wait())
        #expect(outcome.events == [String(describing: LongThreadError.stopped)], "\(name)")
        #expect(thread.waitUntilExit(timeout: .seconds(10)))
    }

    @Test("run on the thread itself throws .stopped once a stop began")
    func inlineRunAfterStop() async throws {
        let thread = try LongThread(name: "lt-inline-run")
        let (onThread, result) = await withTaskExecutorPreference(thread) { () async -> (Bool, LongThreadError?) in
            await Task.yield() // the body starts on the caller's executor; it is on the thread after a hop
            let onThread = thread.isCurrent
            thread.stop(waitUntilDone: false)
            do { _ = try await thread.run { 1 } } catch let error as LongThreadError { return (onThread, error) } catch {}
            return (onThread, nil)
        }
        #expect(onThread)
        #expect(result == .stopped)
        await thread.waitUntilExit()
    }

    @Test("a cancelled task's run on the thread itself throws CancellationError, after a stop too")
    func inlineRunCancelledAfterStop() async throws {
        let thread = try LongThread(name: "lt-inline-run-cancelled")
        // A task of its own, so that cancelling it leaves the test's task alone. (On this runtime
        // the call into `run` hops, and a stopping thread still runs its jobs, so this
        // takes the post path, as `inlineRunAfterStop` does; `run` checks cancellation before
        // the inline rule for a runtime that stays on the thread.)
        let (onThread, outcome) = await Task { await withTaskExecutorPreference(thread) { () async -> (Bool, String) in
            await Task.yield() // the body starts on the caller's executor; it is on the thread after a hop
            let onThread = thread.isCurrent
            thread.stop(waitUntilDone: false)
            withUnsafeCurrentTask { $0?.cancel() }
            do {
                _ = try await thread.run { 1 }
                return (onThread, "ran")
            } catch is CancellationError {
                return (onThread, "cancelled")
            } catch {
                return (onThread, "\(error)")
            }
        } }.value
        #expect(onThread)
        #expect(outcome == "cancelled")
        await thread.waitUntilExit()
    }
}
