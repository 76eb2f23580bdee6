import LongThreads

/// The library under test, used exactly as its README shows.
final class LongThreadContender: Contender, @unchecked Sendable {
    static let name = "LongThread"
    static let features: Features = .all

    private let thread: LongThread

    init() throws {
        thread = try LongThread(name: "bench")
    }

    func post(_ work: @escaping @Sendable () -> Void) throws {
        try thread.perform(work)
    }

    func roundTrip() throws {
        try thread.sync {}
    }

    func runOnWorker(_ body: @escaping @Sendable () -> Void) throws {
        try thread.perform(waitUntilDone: true, body)
    }

    func stop(_ pending: Pending) {
        thread.stop(pending: pending == .drain ? .drain : .discard)
    }
}
