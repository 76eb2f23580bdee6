import Foundation
import Glibc
import LongThreads
import LongThreadsTestKit
import LongThreadsTestSupport
import Testing

private struct SetUpError: Error {}

@Suite("Test kit: faults on demand")
struct FaultTests {
    @Test("the next post is refused with the error asked for, once, whatever the spelling", arguments: [
        LongThreadError.queueFull, .stopped,
    ])
    func refuseNextPost(error: LongThreadError) throws {
        let test = try TestThread(name: "kit-refuse")
        defer { test.thread.stop() }
        test.refuseNextPost(with: error)
        #expect(throws: error) { try test.thread.perform {} }
        try test.thread.perform {} // accepted again
        test.refuseNextPost(with: error)
        #expect(throws: error) { try test.thread.sync {} }
        test.refuseNextPost(with: error)
        #expect(throws: error) { try test.thread.perform(after: .seconds(1)) {} }
        test.refuseNextPost(with: error)
        #expect(throws: error) { try test.thread.perform(at: test.clock.now + .seconds(1)) {} }
        #expect(test.thread.isRunning)
    }

    @Test("a thread that cannot start throws the error asked for, and no thread is left", arguments: [
        LongThreadError.cannotStart(errno: EAGAIN), .outOfResources(errno: EMFILE),
    ])
    func cannotStart(error: LongThreadError) {
        var tornDown = false
        #expect(throws: error) {
            _ = try TestThread(name: "kit-nostart", options: .init(tearDown: {}), startFailure: error)
            tornDown = true
        }
        #expect(!tornDown)
    }

    @Test("a failing setUp makes init throw setUpFailed, as LongThread.init does")
    func failingSetUp() {
        do {
            _ = try TestThread(name: "kit-setup", options: .init(setUp: { throw SetUpError() }))
            Issue.record("init did not throw")
        } catch {
            guard case .setUpFailed(let inner) = error else {
                Issue.record("threw \(error)")
                return
            }
            #expect(inner is SetUpError)
        }
    }

    @Test("a discarding stop between two given items: the first ran, the rest are discarded, tearDown ran")
    func stopBetweenItems() throws {
        let tornDown = Latch()
        let test = try TestThread(name: "kit-stop-between", paused: true, options: .init(tearDown: { tornDown.countDown() }))
        let log = Recorder<String>()
        let first = try test.thread.submit(label: "first") { log.record("first") }
        let second = try test.thread.submit(label: "second") { log.record("second") }
        let third = try test.thread.submit(label: "third") { log.record("third") }
        test.stop(afterItemLabeled: "first", pending: .discard)
        try test.runUntilIdle()
        test.thread.stop()
        #expect(log.events == ["first"])
        #expect(first.state == .finished)
        #expect(second.state == .discarded)
        #expect(third.state == .discarded)
        #expect(tornDown.wait())
        #expect(throws: LongThreadError.stopped) { try test.thread.perform {} }
    }

    @Test("a draining stop between two given items: later items still run, new posts are refused")
    func drainingStopBetweenItems() throws {
        let test = try TestThread(name: "kit-drain-between", paused: true)
        let log = Recorder<String>()
        let thread = test.thread
        try thread.perform(label: "first") { log.record("first") }
        try thread.perform(label: "second") {
            log.record((try? thread.perform {}) == nil ? "second: refused" : "second: accepted")
        }
        test.stop(afterItemLabeled: "first", pending: .drain)
        try test.runUntilIdle()
        thread.stop()
        #expect(log.events == ["first", "second: refused"])
    }
}
