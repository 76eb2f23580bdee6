import Glibc
import LongThreads

/// Awaits a LongThread's end without blocking the cooperative pool.
///
/// `LongThread.waitUntilExit()` blocks, and the pool has one thread per core: a service parked
/// there for the process's life would take a core's worth of the pool away (on a 2-core machine,
/// half of it). So a small detached pthread blocks instead and resumes the task. Not Foundation's
/// `Thread`: when creation fails it silently never runs, and the service would never return.
enum ExitWaiter {
    /// The waiter's stack: it only parks in a futex, joins, and resumes a continuation.
    static let stackSize = 128 * 1024

    static func exit(of thread: LongThread) async {
        let spawned = await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            let started = spawnDetached {
                thread.waitUntilExit()
                continuation.resume(returning: true)
            }
            if !started { continuation.resume(returning: false) }
        }
        if spawned { return }
        // The process is out of threads: poll instead, from the pool, in short non-blocking looks.
        // (`waitUntilExit(timeout: .zero)` only blocks for the join of a thread that has ended.)
        while !thread.waitUntilExit(timeout: .zero) {
            try? await Task.sleep(for: .milliseconds(10))
        }
    }

    /// Runs `body` on a new detached pthread; false if the thread could not be created.
    private static func spawnDetached(_ body: @escaping @Sendable () -> Void) -> Bool {
        var attributes = pthread_attr_t()
        pthread_attr_init(&attributes)
        defer { pthread_attr_destroy(&attributes) }
        pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED))
        pthread_attr_setstacksize(&attributes, stackSize)
        let context = Unmanaged.passRetained(Body(body)).toOpaque()
        var thread = pthread_t()
        let rc = pthread_create(&thread, &attributes, { context in
            Unmanaged<Body>.fromOpaque(context!).takeRetainedValue().run()
            return nil
        }, context)
        if rc != 0 {
            Unmanaged<Body>.fromOpaque(context).release()
            return false
        }
        return true
    }

    private final class Body: Sendable {
        let run: @Sendable () -> Void
        init(_ run: @escaping @Sendable () -> Void) { self.run = run }
    }
}
