import CLongThreadsShims
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
///
/// A handle to one allocation holding both the value and the mutex (a `ManagedBuffer`: the mutex
/// is its element, at a stable address), so copies share the lock. A class holding the mutex
/// through a pointer would cost a second allocation per lock, five per thread's life.
///
/// Never a bare closure (or an optional or tuple of one) as `State`: the state is stored at the
/// most general abstraction, and each `inout` access converts such a closure and stores it back
/// wrapped in two more thunks (`AttachedCallback` keeps its callback in a class for this reason).
struct Locked<State>: @unchecked Sendable {
    private final class Storage: ManagedBuffer<State, pthread_mutex_t> {
        deinit {
            _ = withUnsafeMutablePointerToElements { pthread_mutex_destroy($0) }
        }
    }

    private let storage: Storage

    init(_ initial: consuming State) {
        // Moved in, not copied: a copy of a thread's shared state retains every array and
        // dictionary in it, and destroying the original releases them again.
        var pending = Optional(initial)
        storage = unsafeDowncast(Storage.create(minimumCapacity: 1) { _ in pending.take()! }, to: Storage.self)
        storage.withUnsafeMutablePointerToElements { mutex in
            mutex.initialize(to: pthread_mutex_t())
            var attributes = pthread_mutexattr_t()
            pthread_mutexattr_init(&attributes)
            pthread_mutexattr_settype(&attributes, Int32(PTHREAD_MUTEX_ADAPTIVE_NP))
            let rc = pthread_mutex_init(mutex, &attributes)
            pthread_mutexattr_destroy(&attributes)
            precondition(rc == 0, "BUG IN LongThreads (please report): pthread_mutex_init failed with \(rc)")
        }
    }

    // Through the buffer's pointers: the mutex already makes each access exclusive, and a class
    // property's dynamic exclusivity check cost ~117 instructions per queued item (callgrind).
    @inline(__always)
    func withLock<Result, Failure: Error>(
        _ body: (inout State) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        try storage.withUnsafeMutablePointers { (state, mutex) throws(Failure) -> Result in
            pthread_mutex_lock(mutex)
            defer { pthread_mutex_unlock(mutex) }
            return try body(&state.pointee)
        }
    }

    /// Whether the calling thread holds the mutex, for debug checks of state guarded by it
    /// elsewhere (`RunLoopEngine`). glibc records the owner's thread id in every kind of mutex.
    var isHeldByCurrentThread: Bool {
        storage.withUnsafeMutablePointerToElements { $0.pointee.__data.__owner == CLongThreadsShims_gettid() }
    }
}
