/// Work whose caller blocks until it ran: `sync` and `perform(waitUntilDone: true)`.
///
/// The caller's closure may be non-escaping (made escapable with `withoutActuallyEscaping`), so the
/// closure is dropped before the caller is woken: nothing may hold it once `wait()` returns.
final class BlockingWork<T>: WaitingWork, @unchecked Sendable {
    // Written before `done.signal()` by the one thread that runs or discards the work, read by the
    // caller after `done.wait()` (release/acquire through the event).
    private var work: (() throws -> T)?
    private var outcome: Result<T, any Error>?
    private let done = OneShotEvent()
    let label: String?

    init(_ work: @escaping () throws -> T, label: String? = nil) {
        self.work = work
        self.label = label
    }

    func run() {
        outcome = invoke()
        done.signal()
    }

    func discard() {
        work = nil
        outcome = .failure(LongThreadError.discarded)
        done.signal()
    }

    /// Drops the work when it was never queued (the enqueue threw). Caller's thread.
    func abandon() {
        work = nil
    }

    /// Blocks until the work ran or was discarded, then returns or throws its outcome.
    func waitForOutcome() throws -> T {
        done.wait()
        return try outcome!.get()
    }

    // A separate function so the closure's last reference dies here, before `done.signal()`.
    @inline(never)
    private func invoke() -> Result<T, any Error> {
        guard let work = work.take() else { return .failure(LongThreadError.discarded) }
        return Result { try work() }
    }
}
