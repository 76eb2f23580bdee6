import CBenchSupport
import Glibc
import Synchronization

/// The loaded condition (`--hogs N`): N CPU-bound threads that run during every measurement, as
/// a busy host's neighbours do. They are never pinned (the pinned figure pins every other thread)
/// and their CPU time is charged to no contender.
enum Hogs {
    private static let stopRequested = Atomic<Bool>(false)
    private static let ids = Mutex<[Int32]>([])
    private static let threads = Mutex<[PosixThread]>([])

    /// The hogs' kernel thread ids.
    static var threadIDs: Set<Int32> { Set(ids.withLock { $0 }) }

    /// Starts `count` hogs and returns once each runs.
    static func start(_ count: Int) {
        guard count > 0 else { return }
        stopRequested.store(false, ordering: .relaxed)
        let started = Gate()
        let spawned = (0..<count).map { _ in
            PosixThread.spawn {
                ids.withLock { $0.append(bench_gettid()) }
                started.arriveAndWait()
                var counter: UInt64 = 0
                while !stopRequested.load(ordering: .relaxed) {
                    // Pure computation, no memory traffic beyond the flag: a CPU-bound neighbour.
                    for _ in 0..<1_000 { counter = counter &* 6364136223846793005 &+ 1442695040888963407 }
                }
                blackHole(counter)
            }
        }
        started.waitForArrivals(count)
        started.open()
        threads.withLock { $0 = spawned }
    }

    /// Stops the hogs and waits for them; `start` may be called again after.
    static func stop() {
        stopRequested.store(true, ordering: .relaxed)
        for thread in threads.withLock({ $0 }) { thread.join() }
        threads.withLock { $0 = [] }
        ids.withLock { $0 = [] }
    }
}

/// Keeps a value alive past the optimizer.
@inline(never)
func blackHole<T>(_ value: T) {
    withExtendedLifetime(value) {}
}
