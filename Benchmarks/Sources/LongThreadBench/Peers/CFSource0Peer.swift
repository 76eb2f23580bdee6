import CoreFoundation
import Dispatch

/// Peer 3: the best plain CF design, with no library on top. A pthread runs a CFRunLoop with one
/// version-0 source; producers append to a mutex-guarded array and signal + wake the loop only
/// when it goes from empty to non-empty, so a burst costs one wake-up.
final class CFSource0Peer: Contender, @unchecked Sendable {
    static let name = "CF source0"
    static let features: Features = .all

    struct Stopped: Error {}

    /// Everything the source's callout reaches through its `info` pointer.
    private final class Queue: @unchecked Sendable {
        let lock = PthreadLock()
        var pending: [Job] = []  // guarded by `lock`
        var stopRequested = false                // guarded by `lock`
        /// The drained buffer, swapped with `pending` so both keep their capacity: no
        /// allocation per item once warm. Only touched on the worker thread.
        var running: [Job] = []
        var exitRequested = false                // only touched on the worker thread
        var runLoop: CFRunLoop?                  // written before the peer's init returns
        var source: CFRunLoopSource?             // idem

        /// The source's perform callout, on the worker: run batches until the queue stays empty.
        func drain() {
            while true {
                lock.lock()
                swap(&pending, &running)
                let stopping = stopRequested
                lock.unlock()
                if running.isEmpty {
                    if stopping {
                        exitRequested = true
                        CFRunLoopStop(CFRunLoopGetCurrent())
                    }
                    return
                }
                for job in running { job.run() }
                running.removeAll(keepingCapacity: true)
            }
        }
    }

    private let queue = Queue()
    private let thread: PosixThread
    private let runLoop: CFRunLoop
    private let source: CFRunLoopSource

    init() throws {
        let queue = self.queue
        let ready = DispatchSemaphore(value: 0)
        thread = PosixThread.spawn {
            var context = CFRunLoopSourceContext()
            // Unretained: the peer owns the queue and outlives the thread (stop joins it).
            context.info = Unmanaged.passUnretained(queue).toOpaque()
            context.perform = { info in Unmanaged<Queue>.fromOpaque(info!).takeUnretainedValue().drain() }
            let source = CFRunLoopSourceCreate(nil, 0, &context)!
            let runLoop = CFRunLoopGetCurrent()!
            CFRunLoopAddSource(runLoop, source, kCFRunLoopDefaultMode)  // also keeps the mode alive
            queue.runLoop = runLoop
            queue.source = source
            ready.signal()
            CFRunLoopSupport.runUntil { queue.exitRequested }
            CFRunLoopRemoveSource(runLoop, source, kCFRunLoopDefaultMode)
        }
        ready.wait()
        runLoop = queue.runLoop!
        source = queue.source!
    }

    func post(_ work: @escaping @Sendable () -> Void) throws {
        queue.lock.lock()
        guard !queue.stopRequested else {
            queue.lock.unlock()
            throw Stopped()
        }
        let wasEmpty = queue.pending.isEmpty
        queue.pending.append(Job(run: work))
        queue.lock.unlock()
        if wasEmpty { wake() }
    }

    func roundTrip() throws {
        try runOnWorker(noWork)
    }

    func runOnWorker(_ body: @escaping @Sendable () -> Void) throws {
        let done = DispatchSemaphore(value: 0)
        try post {
            body()
            done.signal()
        }
        done.wait()
    }

    func stop(_ pending: Pending) {
        queue.lock.lock()
        queue.stopRequested = true
        var dropped: [Job] = []
        if pending == .discard { swap(&dropped, &queue.pending) }
        queue.lock.unlock()
        wake()  // always: the callout must see the stop even if the queue was not empty
        thread.join()
        dropped.removeAll()  // released here, outside the lock: a million releases take a while
    }

    private func wake() {
        CFRunLoopSourceSignal(source)  // survives even if the loop is between two runs
        CFRunLoopWakeUp(runLoop)
    }
}
