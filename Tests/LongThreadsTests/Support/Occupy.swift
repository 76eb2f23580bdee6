import LongThreads
import Testing

extension LongThread {
    /// Occupies the thread with an item that waits for `gate` (at most its timeout); returns once
    /// that item runs, so everything posted afterwards waits behind it.
    func occupy(until gate: Latch) throws {
        let running = Latch()
        try perform {
            running.countDown()
            gate.wait()
        }
        #expect(running.wait())
    }
}

/// An object whose death a test can watch: captured by a closure, it dies with the closure.
final class Canary: Sendable {
    func touch() {}
}

