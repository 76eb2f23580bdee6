import NIOCore
import NIOPosix

/// Peer 5: a SwiftNIO event loop with one thread, the usual way server code gets a resident thread.
final class NIOPeer: Contender, @unchecked Sendable {
    static let name = "NIO EventLoop"
    // No discard: a shutdown runs the tasks already queued.
    static let features: Features = [.post, .roundTrip, .resident, .idle]

    private let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    private let loop: any EventLoop

    init() {
        loop = group.next()
    }

    func post(_ work: @escaping @Sendable () -> Void) {
        loop.execute(work)
    }

    func roundTrip() throws {
        try loop.submit {}.wait()
    }

    func runOnWorker(_ body: @escaping @Sendable () -> Void) throws {
        try loop.submit(body).wait()
    }

    func stop(_ pending: Pending) throws {
        // A barrier first, so "drain" means the same as for the others whatever NIO does with
        // tasks still queued at shutdown; then shut down, which joins the thread.
        try loop.submit {}.wait()
        try group.syncShutdownGracefully()
    }
}
