import LongThreads
import Testing

@Suite("Cancelling timers")
struct TimerCancellationTests {
    @Test("a cancelled run(after:) releases its timer at once, not at its deadline")
    func cancelledRunAfterReleasesTimer() async throws {
        let thread = try LongThread(name: "lt-cancel-after")
        defer { thread.stopAtTestEnd() }
        let waiters = (0..<100).map { _ in Task { try await thread.run(after: .seconds(3600)) { 1 } } }
        #expect(await eventually { thread.statistics.pendingTimers == 100 })
        for waiter in waiters { waiter.cancel() }
        for waiter in waiters {
            await #expect(throws: CancellationError.self) { try await waiter.value }
        }
        #expect(await eventually { thread.statistics.pendingTimers == 0 })
    }
}
