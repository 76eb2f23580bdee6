/// Peer 6: the textbook worker. A pthread sleeps on a condition variable; producers append to a
/// mutex-guarded array and signal only when it goes from empty to non-empty.
final class CondvarPeer: Contender, @unchecked Sendable {
    static let name = "pthread+condvar"
    static let features: Features = .all

    struct Stopped: Error {}

    private let lock = PthreadLock()
    private let workAvailable = PthreadCondition()
    private let workCompleted = PthreadCondition()
    // All guarded by `lock`.
    private var pending: [Job] = []
    private var stopRequested = false
    private var enqueued = 0
    private var completed = 0
    private var waiters = 0
    private var thread: PosixThread?  // set in init, read by stop

    init() {
        thread = PosixThread.spawn { [self] in serve() }
    }

    private func serve() {
        // Swapped with `pending` so both arrays keep their capacity: no allocation per item.
        var running: [Job] = []
        lock.lock()
        while true {
            while pending.isEmpty && !stopRequested { workAvailable.wait(lock) }
            if pending.isEmpty { break }  // stop requested and nothing left
            swap(&pending, &running)
            lock.unlock()
            for job in running { job.run() }
            let count = running.count
            running.removeAll(keepingCapacity: true)
            lock.lock()
            completed += count
            if waiters > 0 { workCompleted.broadcast() }
        }
        lock.unlock()
    }

    func post(_ work: @escaping @Sendable () -> Void) throws {
        lock.lock()
        guard !stopRequested else {
            lock.unlock()
            throw Stopped()
        }
        let wasEmpty = pending.isEmpty
        pending.append(Job(run: work))
        enqueued += 1
        lock.unlock()
        if wasEmpty { workAvailable.signal() }
    }

    func roundTrip() throws {
        try runOnWorker(noWork)
    }

    /// Waits on the same lock for the completion count to pass this item's ticket: no
    /// per-call semaphore.
    func runOnWorker(_ body: @escaping @Sendable () -> Void) throws {
        lock.lock()
        guard !stopRequested else {
            lock.unlock()
            throw Stopped()
        }
        if pending.isEmpty { workAvailable.signal() }
        pending.append(Job(run: body))
        enqueued += 1
        let ticket = enqueued
        waiters += 1
        while completed < ticket { workCompleted.wait(lock) }
        waiters -= 1
        lock.unlock()
    }

    func stop(_ pending: Pending) {
        var dropped: [Job] = []
        lock.lock()
        stopRequested = true
        if pending == .discard { swap(&dropped, &self.pending) }
        lock.unlock()
        workAvailable.signal()
        thread?.join()
        dropped.removeAll()
    }
}
