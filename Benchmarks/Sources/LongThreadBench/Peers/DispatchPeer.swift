import Dispatch

/// Peer 4: a serial `DispatchQueue`. It has no thread of its own (work runs on pool threads),
/// so it shows what thread affinity costs compared with not having it.
final class DispatchPeer: Contender, @unchecked Sendable {
    static let name = "DispatchQueue"
    // Neither resident nor able to drop queued blocks without wrapping each one.
    static let features: Features = [.post, .roundTrip, .idle]

    private let queue = DispatchQueue(label: "bench.serial")

    init() {}

    func post(_ work: @escaping @Sendable () -> Void) {
        queue.async(execute: work)
    }

    /// async + semaphore: `queue.sync` would run the block on the caller's own thread, which is
    /// no round trip at all.
    func roundTrip() {
        runOnWorker(noWork)
    }

    func runOnWorker(_ body: @escaping @Sendable () -> Void) {
        let done = DispatchSemaphore(value: 0)
        queue.async {
            body()
            done.signal()
        }
        done.wait()
    }

    /// A serial queue has nothing to join: waiting for everything queued is its "stop".
    func stop(_ pending: Pending) {
        queue.sync {}
    }
}
