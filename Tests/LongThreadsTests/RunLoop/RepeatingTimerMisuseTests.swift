import Foundation
import LongThreads
import Testing

/// A repeating timer asked for with an interval that would fire without end.
@Suite("Repeating timers: an interval of zero or below", .timeLimit(.minutes(1)))
struct RepeatingTimerMisuseTests {
    @Test("schedule(every: .zero) and a negative interval throw instead of trapping; the thread serves on")
    func zeroIntervalThrows() async {
        // In a child process: before, this trapped (a precondition), taking the process down.
        await #expect(processExitsWith: .success) {
            RepeatingTimerMisuseTests.scheduleZeroIntervals()
        }
    }

    /// In the child: schedules zero and negative intervals; exits 0 when each threw, naming the
    /// interval, and the thread serves on with no timer pending.
    static func scheduleZeroIntervals() -> Never {
        guard let thread = try? LongThread(name: "lt-zero-every") else { exit(1) }
        for interval in [Duration.zero, .milliseconds(-1)] {
            do {
                try thread.schedule(every: interval) { _ in }
                exit(2)
            } catch {
                guard "\(error)".contains("interval") else { exit(3) }
            }
        }
        guard (try? thread.sync({ 42 })) == 42, thread.statistics.pendingTimers == 0 else { exit(4) }
        thread.stop()
        exit(0)
    }
}
