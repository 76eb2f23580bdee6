import Foundation
import LongThreads
import Testing

/// Closures written in `@MainActor` code run on the LongThread without tripping Swift's dynamic
/// isolation checks (the demo, a `main.swift`, checks the same in a release build).
@Suite("Closures from @MainActor code")
struct IsolationTests {
    @MainActor
    @Test("sync, perform and run accept closures written in @MainActor code")
    func mainActorClosures() async throws {
        let thread = try LongThread(name: "lt-mainactor")
        defer { thread.stopAtTestEnd() }
        let local = 20
        let value = try thread.syncBlocking { local + 1 }
        #expect(value == 21)
        let onThread = try thread.syncBlocking { LongThread.current === thread }
        #expect(onThread)
        let log = Recorder<Bool>()
        try thread.performBlocking { log.record(thread.isCurrent) }
        #expect(log.events == [true])
        let ran = try await thread.run { thread.isCurrent }
        #expect(ran)
    }
}
