import Foundation
import Glibc
import LongThreads

/// Kept-alive connections waiting for the next request to the same server: NSURLConnection's
/// connection cache, in small.
///
/// A connection comes back here after a response that left it reusable (HTTP/1.1 without
/// `Connection: close`, a body framed by length or chunks and read to its end, nothing sent after
/// it). While idle it is watched for readability, so a server closing it (or sending what nobody
/// asked for) gets it closed here at once, and it is closed after ``idleTimeout`` in any case.
/// Reuse is sequential: one request at a time per connection, no pipelining.
///
/// Network thread only: made there lazily, used there, its sources and timers fire there.
final class AFConnectionPool: @unchecked Sendable {
    // `@unchecked Sendable`: every use is on the network thread (the handlers below run there).

    /// Idle connections kept per server; one more is closed instead.
    static let maximumIdlePerEndpoint = 4
    /// How long a connection may wait idle before it is closed.
    static let idleTimeout: Duration = .seconds(30)

    private struct Idle {
        let fd: Int32
        let source: DescriptorSource
        let timer: LongThreadTimer?
    }

    // MARK: Immutable
    private let thread: LongThread

    // MARK: Network thread only
    private var idle: [AFRequestTarget.Endpoint: [Idle]] = [:]

    init(thread: LongThread) {
        self.thread = thread
    }

    /// How many connections wait, to all servers.
    var idleCount: Int { idle.values.reduce(0) { $0 + $1.count } }

    /// An idle connection to `endpoint`, the most recently used, if there is one. The caller owns
    /// it from now on.
    func take(_ endpoint: AFRequestTarget.Endpoint) -> Int32? {
        while let entry = idle[endpoint]?.popLast() {
            if idle[endpoint]?.isEmpty == true { idle[endpoint] = nil }
            entry.source.cancel()
            entry.timer?.cancel()
            // The server may have closed it (or sent bytes nobody asked for) since this thread
            // last looked: a peek says so without waiting for the source to fire.
            var byte: UInt8 = 0
            if recv(entry.fd, &byte, 1, Int32(MSG_PEEK | MSG_DONTWAIT)) < 0, errno == EAGAIN { return entry.fd }
            close(entry.fd)
        }
        return nil
    }

    /// Keeps `fd`, connected to `endpoint`, for a later request, or closes it if enough wait.
    func put(_ fd: Int32, for endpoint: AFRequestTarget.Endpoint, modes: [RunLoop.Mode]) {
        guard idle[endpoint, default: []].count < Self.maximumIdlePerEndpoint,
              let source = try? thread.watch(fd, for: .readable, modes: modes, { [self] _ in drop(fd, endpoint) })
        else {
            close(fd)
            return
        }
        let timer = try? thread.perform(after: Self.idleTimeout, modes: modes) { [self] in drop(fd, endpoint) }
        idle[endpoint, default: []].append(Idle(fd: fd, source: source, timer: timer))
    }

    /// Closes an idle connection: the server closed it or spoke unasked, or it idled too long.
    private func drop(_ fd: Int32, _ endpoint: AFRequestTarget.Endpoint) {
        guard let index = idle[endpoint]?.firstIndex(where: { $0.fd == fd }), let entry = idle[endpoint]?.remove(at: index) else { return }
        if idle[endpoint]?.isEmpty == true { idle[endpoint] = nil }
        entry.source.cancel()
        entry.timer?.cancel()
        close(fd)
    }
}
