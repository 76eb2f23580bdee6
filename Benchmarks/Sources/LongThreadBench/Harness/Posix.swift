import Glibc

/// Monotonic time in nanoseconds: one vDSO call, no allocation, cheap enough to bracket a round trip.
@inline(__always)
func nowNanoseconds() -> UInt64 {
    var time = timespec()
    clock_gettime(CLOCK_MONOTONIC, &time)
    return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
}

/// The calling thread's CPU time in nanoseconds (CLOCK_THREAD_CPUTIME_ID).
func threadCPUNanoseconds() -> UInt64 {
    var time = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
    return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
}

/// A joinable pthread running one closure. The producers, the floors and the CF peers need no more.
struct PosixThread: Sendable {
    private final class Body: Sendable {
        let run: @Sendable () -> Void
        init(_ run: @escaping @Sendable () -> Void) { self.run = run }
    }

    let handle: pthread_t

    static func spawn(_ body: @escaping @Sendable () -> Void) -> PosixThread {
        let context = Unmanaged.passRetained(Body(body)).toOpaque()
        var handle = pthread_t()
        let result = pthread_create(&handle, nil, { raw in
            Unmanaged<Body>.fromOpaque(raw!).takeRetainedValue().run()
            return nil
        }, context)
        // A benchmark cannot go on without its threads; a failure here is the machine's limit.
        precondition(result == 0, "pthread_create failed with \(result)")
        return PosixThread(handle: handle)
    }

    func join() {
        pthread_join(handle, nil)
    }
}

/// A pthread mutex at a stable address (a Swift stored `pthread_mutex_t` may move).
final class PthreadLock: @unchecked Sendable {
    let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)

    init() { pthread_mutex_init(mutex, nil) }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    @inline(__always) func lock() { pthread_mutex_lock(mutex) }
    @inline(__always) func unlock() { pthread_mutex_unlock(mutex) }
}

/// A condition variable used with one `PthreadLock`.
final class PthreadCondition: @unchecked Sendable {
    private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)

    init() { pthread_cond_init(condition, nil) }

    deinit {
        pthread_cond_destroy(condition)
        condition.deallocate()
    }

    /// Call with `lock` held, in a loop over the predicate (wake-ups may be spurious).
    @inline(__always) func wait(_ lock: PthreadLock) { pthread_cond_wait(condition, lock.mutex) }
    @inline(__always) func signal() { pthread_cond_signal(condition) }
    @inline(__always) func broadcast() { pthread_cond_broadcast(condition) }
}

/// A one-shot start line: threads arrive and wait until it opens. Starts producers together (the
/// timer starts once all have arrived) and holds a worker busy while a queue is filled.
final class Gate: @unchecked Sendable {
    private let lock = PthreadLock()
    private let changed = PthreadCondition()
    private var isOpen = false  // guarded by `lock`
    private var arrivals = 0    // guarded by `lock`

    func arriveAndWait() {
        lock.lock()
        arrivals += 1
        changed.broadcast()
        while !isOpen { changed.wait(lock) }
        lock.unlock()
    }

    func waitForArrivals(_ count: Int) {
        lock.lock()
        while arrivals < count { changed.wait(lock) }
        lock.unlock()
    }

    func open() {
        lock.lock()
        isOpen = true
        lock.unlock()
        changed.broadcast()
    }
}

/// Stops the benchmark with a message: a contender that fails mid-run leaves no figure worth printing.
func must<T>(_ what: @autoclosure () -> String, _ body: () throws -> T) -> T {
    do {
        return try body()
    } catch {
        fatalError("\(what()): \(error)")
    }
}

/// Progress and errors go to standard error, so that standard output is the table alone.
/// (Glibc's `stderr` is a mutable global, which Swift 6 rejects.)
func printToStandardError(_ line: String) {
    var bytes = Array((line + "\n").utf8)
    _ = write(STDERR_FILENO, &bytes, bytes.count)
}
