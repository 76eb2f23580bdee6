import Glibc

/// A value guarded by a pthread mutex.
///
/// Why not `Synchronization.Mutex`: on Linux ThreadSanitizer cannot see its acquire and release (the
/// standard library is not instrumented), so every access it guards is reported as a race, and
/// `--sanitize=thread` would be useless for this library. `pthread_mutex_lock` is intercepted by TSan.
final class Locked<State>: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    // Guarded by `mutex`.
    private var state: State

    init(_ initial: State) {
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        let rc = pthread_mutex_init(mutex, nil)
        precondition(rc == 0, "BUG IN LongThreads (please report): pthread_mutex_init failed with \(rc)")
        state = initial
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    @inline(__always)
    func withLock<Result, Failure: Error>(
        _ body: (inout State) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&state)
    }
}
