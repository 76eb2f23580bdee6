@_spi(TestKit) import LongThreads

/// Why a stepping call of the test kit gave up.
public enum TestThreadError: Error, Equatable, CustomStringConvertible {
    /// The thread did not finish what the call waited for within its settle timeout (real time):
    /// an item that blocks (on the test itself, say), or one that keeps posting more work.
    case stillBusy(thread: String?, waitingFor: String)

    init(_ error: TestHarness.SettleError) {
        self = .stillBusy(thread: error.thread, waitingFor: error.waitingFor)
    }

    /// A sentence for the test's failure message.
    public var description: String {
        switch self {
        case .stillBusy(let thread, let waitingFor):
            "LongThreadsTestKit: thread \(thread.map { "\"\($0)\"" } ?? "nil") stayed busy while the test waited for \(waitingFor)"
        }
    }
}

/// Runs `body`, turning the harness's settle error into a ``TestThreadError``.
func settling<T>(_ body: () throws(TestHarness.SettleError) -> T) throws(TestThreadError) -> T {
    do throws(TestHarness.SettleError) {
        return try body()
    } catch {
        throw TestThreadError(error)
    }
}
