import LongThreads
import LongThreadsTestSupport

extension LongThread {
    /// `block(until:)` whose hold outlasts any stall of the test's own task: a test that stops the
    /// thread while calls to a pinned actor are still to be queued must not see the drain end
    /// early (a job after the thread's end traps the whole run). The test opens `gate` itself.
    func blockForStop(until gate: Latch) async throws {
        let running = Latch()
        try perform {
            running.countDown()
            _ = gate.wait(timeout: .seconds(600))
        }
        _ = await running.value()
    }
}
