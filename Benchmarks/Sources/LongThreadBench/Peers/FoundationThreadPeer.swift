import CBenchSupport
import CoreFoundation
import Dispatch
import Foundation

/// Peer 2: what most code does today. A Foundation `Thread` whose run loop is kept alive by a
/// port-less CF source, fed with `CFRunLoopPerformBlock` + `CFRunLoopWakeUp` for every item.
final class FoundationThreadPeer: Contender, @unchecked Sendable {
    static let name = "Thread+PerformBlock"
    // No discard: CF offers no way to drop blocks it has queued.
    static let features: Features = [.post, .roundTrip, .resident, .idle]

    /// State owned by the worker thread; `runLoop` is written once before `init` returns.
    private final class Worker: @unchecked Sendable {
        var runLoop: CFRunLoop?
        /// The kernel id of the thread, written before `ready`.
        var tid: pid_t = 0
        var exitRequested = false  // only touched on the worker thread
        let ready = DispatchSemaphore(value: 0)
        /// Foundation's `Thread` cannot be joined: the body signals this as its last act, and
        /// `exitDescriptor` tells when the thread has really ended.
        let exited = DispatchSemaphore(value: 0)
    }

    private let worker = Worker()
    private let runLoop: CFRunLoop
    /// Readable once the thread has ended (`bench_thread_pidfd`), or -1 where the kernel cannot
    /// tell (before Linux 6.9). `Thread` is detached, and what it does after its body returns
    /// (Foundation's and CF's thread-exit work: freeing the run loop, closing its descriptors)
    /// is part of its life: without waiting for it, `stop` returned tens of microseconds early
    /// and the next contender's life paid for it (on the CPUs this thread was still using).
    private let exitDescriptor: Int32
    /// `CFRunLoopPerformBlock` takes its mode as a `CFTypeRef` (a string, array or set).
    private let mode: CFTypeRef = unsafeBitCast(kCFRunLoopDefaultMode, to: CFTypeRef.self)

    init() throws {
        let worker = self.worker
        let thread = Thread {
            worker.tid = bench_gettid()
            let runLoop = CFRunLoopGetCurrent()!
            let keepAlive = CFRunLoopSupport.makeKeepAliveSource()
            CFRunLoopAddSource(runLoop, keepAlive, kCFRunLoopDefaultMode)
            worker.runLoop = runLoop
            worker.ready.signal()
            CFRunLoopSupport.runUntil { worker.exitRequested }
            CFRunLoopRemoveSource(runLoop, keepAlive, kCFRunLoopDefaultMode)
            worker.exited.signal()
        }
        thread.start()
        worker.ready.wait()
        runLoop = worker.runLoop!
        // Opened while the thread lives (its id cannot yet be reused): the cost of knowing when a
        // detached thread ends (one `pidfd_open` here, one `poll` in `stop`, ~1 µs) is charged
        // to this peer, as a join is to the others.
        exitDescriptor = bench_thread_pidfd(worker.tid)
    }

    func post(_ work: @escaping @Sendable () -> Void) {
        CFRunLoopPerformBlock(runLoop, mode, work)
        CFRunLoopWakeUp(runLoop)  // PerformBlock alone never wakes the loop
    }

    func roundTrip() {
        runOnWorker(noWork)
    }

    func runOnWorker(_ body: @escaping @Sendable () -> Void) {
        let done = DispatchSemaphore(value: 0)
        post {
            body()
            done.signal()
        }
        done.wait()
    }

    func stop(_ pending: Pending) {
        // Queued behind everything already posted, so this drains; a CFRunLoopStop sent from
        // here instead could be lost between two runs of the loop.
        let worker = self.worker
        post {
            worker.exitRequested = true
            CFRunLoopStop(CFRunLoopGetCurrent())
        }
        worker.exited.wait()
        if exitDescriptor >= 0 { _ = bench_wait_thread_exit(exitDescriptor) }
    }
}
