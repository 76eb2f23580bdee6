import CLongThreadsShims
import LongThreads

extension LongThread {
    /// The kernel id of this thread, asked on the thread.
    func kernelThreadID() throws -> Int32 {
        try sync { CLongThreadsShims_gettid() }
    }

    /// Queues an item that holds the thread until `gate` opens; returns once it runs, so that what
    /// is posted next waits behind it (and is taken into one batch when the gate opens).
    func hold(until gate: Latch) throws {
        let running = Latch()
        try perform {
            running.countDown()
            gate.wait()
        }
        _ = running.wait()
    }
}
