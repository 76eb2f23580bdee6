import LongThreads

// `sync`, `perform(waitUntilDone: true)` and the blocking `waitUntilExit(timeout:)` are `noasync`:
// from a task they would block a thread of the cooperative pool. Tests that check those calls
// themselves from async test functions reach them through these synchronous frames, knowing the
// wait is short.
extension LongThread {
    /// `sync(_:)`, from an async test.
    func syncBlocking<T>(_ work: sending () throws -> T) throws -> T {
        try sync(work)
    }

    /// `perform(waitUntilDone: true, _:)`, from an async test.
    func performBlocking(_ work: @escaping @Sendable () -> Void) throws(LongThreadError) {
        try perform(waitUntilDone: true, work)
    }

    /// The blocking `waitUntilExit(timeout:)`, from an async test.
    func waitUntilExitBlocking(timeout: Duration?) -> Bool {
        waitUntilExit(timeout: timeout)
    }
}
