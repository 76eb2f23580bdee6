import CLongThreadsShims
import LongThreads

extension LongThread {
    /// The kernel id of this thread, asked on the thread.
    func kernelThreadID() throws -> Int32 {
        try sync { CLongThreadsShims_gettid() }
    }
}
