import LongThreads

extension LongThread {
    /// Whether the thread has ended and been joined, without waiting: the blocking
    /// `waitUntilExit(timeout: .zero)` is `noasync`, so async tests ask through this synchronous getter.
    var hasEnded: Bool { waitUntilExit(timeout: .zero) }
}
