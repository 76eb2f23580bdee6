import Foundation
import LongThreads
import Testing

struct SomeError: Error, Equatable {}

@Suite("Waiting for work: perform(waitUntilDone:), sync, run")
struct WaitingTests {
    @Test("perform(waitUntilDone: true) returns only after the work finished")
    func performWaits() throws {
        let thread = try LongThread(name: "lt-wait")
        defer { thread.stop() }
        let finished = Latch()
        try thread.perform(waitUntilDone: true) {
            usleep(20_000)
            finished.countDown()
        }
        #expect(finished.isOpen)
    }

    @Test("sync returns the work's value and rethrows its error")
    func syncValueAndError() throws {
        let thread = try LongThread(name: "lt-sync")
        defer { thread.stop() }
        #expect(try thread.sync { 6 * 7 } == 42)
        #expect(throws: SomeError()) { try thread.sync { throw SomeError() } }
    }

    @Test("sync may capture and return non-Sendable values the caller owns")
    func syncNonSendable() throws {
        final class Box { var value = 1 }
        let thread = try LongThread(name: "lt-sync-ns")
        defer { thread.stop() }
        let box = Box()
        let result = try thread.sync { () -> Box in
            box.value += 1
            return box
        }
        #expect(result.value == 2)
    }

    @Test("run returns the work's value and rethrows its error")
    func runValueAndError() async throws {
        let thread = try LongThread(name: "lt-run")
        defer { thread.stopAtTestEnd() }
        #expect(try await thread.run { "on \(LongThread.current?.name ?? "?")" } == "on lt-run")
        await #expect(throws: SomeError()) { try await thread.run { throw SomeError() } }
    }

    @Test("called on the thread itself, waiting calls run inline and never deadlock")
    func inlineOnSelf() throws {
        let thread = try LongThread(name: "lt-inline")
        defer { thread.stop() }
        let log = try thread.sync { () -> [String] in
            var log: [String] = []
            log.append(try! thread.sync { "sync" })
            let box = Recorder<String>()
            try! thread.perform(waitUntilDone: true) { box.record("perform") }
            log += box.events
            return log
        }
        #expect(log == ["sync", "perform"])
    }

    @Test("run on a cancelled task skips the work and throws CancellationError")
    func runCancelledBeforeStart() async throws {
        let thread = try LongThread(name: "lt-cancel")
        defer { thread.stopAtTestEnd() }
        let gate = Latch()
        try thread.perform { gate.wait() }
        let ran = Counter()
        let task = Task { try await thread.run { ran.increment() } }
        task.cancel()
        await #expect(throws: CancellationError.self) { try await task.value }
        gate.countDown()
        try await thread.run {}
        #expect(ran.value == 0)
    }

    @Test("run whose work already started completes despite cancellation")
    func runCancelledAfterStart() async throws {
        let thread = try LongThread(name: "lt-cancel2")
        defer { thread.stopAtTestEnd() }
        let started = Latch()
        let release = Latch()
        let task = Task { try await thread.run { started.countDown(); release.wait(); return 7 } }
        #expect(await started.value())
        task.cancel()
        release.countDown()
        #expect(try await task.value == 7)
    }
}
