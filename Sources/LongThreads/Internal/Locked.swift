import Glibc

/// A value guarded by a pthread mutex.
///
/// Why not `Synchronization.Mutex`: on Linux ThreadSanitizer cannot see its acquire and release (the
/// standard library is not instrumented), so every access it guards is reported as a race, and
/// `--sanitize=thread` would be useless for this library. `pthread_mutex_lock` is intercepted by TSan.
///
/// The mutex is adaptive (`PTHREAD_MUTEX_ADAPTIVE_NP`): it spins a little before sleeping. The
/// queue's critical sections are a few dozen nanoseconds, and a producer that found the lock held
/// by the draining loop thread would otherwise pay a futex sleep and wake-up (microseconds).
final class Locked<State>: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    // Guarded by `mutex`, which already makes each access exclusive: the runtime's dynamic
    // exclusivity check on a class property cost ~117 instructions per queued item (callgrind).
    @exclusivity(unchecked) private var state: State

    init(_ initial: State) {
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        var attributes = pthread_mutexattr_t()
        pthread_mutexattr_init(&attributes)
        pthread_mutexattr_settype(&attributes, Int32(PTHREAD_MUTEX_ADAPTIVE_NP))
        let rc = pthread_mutex_init(mutex, &attributes)
        pthread_mutexattr_destroy(&attributes)
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
