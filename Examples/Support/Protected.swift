import Foundation

/// A value behind a lock, for the examples: what `Synchronization.Mutex` would be, except that
/// ThreadSanitizer can see it.
///
/// On Linux the standard library is not built with ThreadSanitizer, so TSan cannot see `Mutex`
/// lock and unlock, and reports the accesses it guards as races whenever two threads really do
/// contend (as with a `Mutex` around the set the Weex example's singleton race fills). `NSLock`
/// locks a pthread mutex, whose calls TSan intercepts. The library itself uses its own
/// pthread-based lock for the same reason.
public final class Protected<Value>: @unchecked Sendable {
    private let lock = NSLock()
    // Guarded by `lock`.
    private var value: Value

    public init(_ value: Value) {
        self.value = value
    }

    /// Runs `body` with the value, under the lock. Any thread; not reentrant.
    public func withLock<Result, Failure: Error>(
        _ body: (inout Value) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
