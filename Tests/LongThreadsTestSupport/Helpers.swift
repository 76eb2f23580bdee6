import CLongThreadsShims
import LongThreads

extension LongThread {
    /// The kernel id of this thread, asked on the thread.
    package func kernelThreadID() throws -> Int32 {
        try sync { CLongThreadsShims_gettid() }
    }

    /// Queues an item that holds the thread until `gate` opens; returns once it runs, so that what
    /// is posted next waits behind it (and is taken into one batch when the gate opens).
    package func hold(until gate: Latch) throws {
        let running = Latch()
        try perform {
            running.countDown()
            gate.wait()
        }
        _ = running.wait()
    }

    /// Stops the thread and waits for its end, from a `defer` in async test code: `defer` cannot
    /// `await`, and the thread must be gone before the next test counts threads or descriptors.
    /// Blocks a thread of the cooperative pool for the drain, as the blocking `stop()` would,
    /// which a test's last line may; code that is not a test's cleanup awaits `stop()` instead.
    package func stopAtTestEnd(pending: PendingWork = .drain) {
        stop(waitUntilDone: true, pending: pending)
    }

    /// Queues an item that holds the thread until `gate` opens; returns once it runs, so that
    /// `statistics.pending` counts only what queues behind it. From async code: the wait blocks no
    /// thread of the cooperative pool.
    package func block(until gate: Latch) async throws {
        let running = Latch()
        try perform {
            running.countDown()
            gate.wait()
        }
        _ = await running.value()
    }
}
