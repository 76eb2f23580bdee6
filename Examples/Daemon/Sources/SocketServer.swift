import Glibc
import LongThreads

/// The Unix-domain socket side: a listener and its connections, all on one LongThread,
/// `daemon.io`, through descriptor sources: the thread sleeps in the kernel until a descriptor is
/// ready, with no thread per client and no polling.
///
/// Each read's complete lines go to the journal as one batch; the journal's replies come back to
/// this thread, so each connection's replies are written in request order.
final class SocketServer: @unchecked Sendable {
    // MARK: Immutable
    let io: LongThread
    let journal: Journal
    let path: String
    private let listener: Int32

    // MARK: daemon.io only
    private var listenSource: DescriptorSource?
    private var connections: [Int32: Connection] = [:]
    private var accepting = true

    /// Binds and listens on the calling thread (so errors reach `main` before anything runs),
    /// then watches the listener on `daemon.io`.
    init(path: String, journal: Journal) throws {
        self.path = path
        self.journal = journal
        listener = try Self.listen(on: path)
        do {
            io = try LongThread(name: "daemon.io")
            try io.sync { [self] in
                listenSource = try io.watch(listener, for: .readable) { [self] _ in acceptReady() }
            }
        } catch {
            close(listener)
            unlink(path)
            throw error
        }
    }

    private static func listen(on path: String) throws(DaemonError) -> Int32 {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard path.utf8.count < capacity else { throw .usage("socket path longer than \(capacity - 1) bytes: \(path)") }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: path.utf8)
            raw[path.utf8.count] = 0
        }
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        if fd < 0 { throw .system("socket", errno: errno) }
        func bindIt() -> Int32 {
            withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
            }
        }
        if bindIt() != 0 {
            // A socket file left by a crashed run: nobody answers on it, so it may go. A live
            // one is never taken over.
            let inUse = errno
            if inUse == EADDRINUSE, !isAnswering(path) {
                unlink(path)
                if bindIt() == 0 { return try finishListen(fd, path) }
            }
            let saved = errno
            close(fd)
            throw .system("cannot bind \(path)", errno: saved)
        }
        return try finishListen(fd, path)
    }

    private static func finishListen(_ fd: Int32, _ path: String) throws(DaemonError) -> Int32 {
        if Glibc.listen(fd, 128) != 0 {
            let saved = errno
            close(fd)
            unlink(path)
            throw .system("cannot listen on \(path)", errno: saved)
        }
        return fd
    }

    private static func isAnswering(_ path: String) -> Bool {
        guard let fd = try? DaemonClient.connect(path) else { return false }
        close(fd)
        return true
    }

    // MARK: - daemon.io

    private func acceptReady() {
        while accepting {
            // accept4 would do both flags at once, but Glibc's module hides it (_GNU_SOURCE).
            let fd = accept(listener, nil, nil)
            if fd < 0 { return } // EAGAIN: drained; anything else: the next callback retries
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            let connection = Connection(fd: fd)
            connections[fd] = connection
            do {
                connection.readSource = try io.watch(fd, for: .readable) { [self] _ in readReady(connection) }
            } catch {
                drop(connection)
            }
        }
    }

    private func readReady(_ connection: Connection) {
        var buffer = [UInt8](repeating: 0, count: 16384)
        let n = read(connection.fd, &buffer, buffer.count)
        if n < 0 {
            if errno == EAGAIN || errno == EINTR { return }
            drop(connection)
            return
        }
        if n == 0 { // the client closed its side: answer what it sent, then close
            stopReading(connection)
            closeIfDone(connection)
            return
        }
        let batch = connection.lines.feed(buffer[0..<n])
        if batch.isEmpty { return }
        connection.outstanding += 1
        do {
            try journal.submit(batch) { [self] replies in
                // Journal thread -> daemon.io: replies are written in the order batches ran.
                try? io.perform { [self] in answer(connection, replies) }
            }
        } catch {
            answer(connection, batch.map { _ in DaemonReplyError.shuttingDown.reply })
        }
    }

    private func answer(_ connection: Connection, _ replies: [String]) {
        connection.outstanding -= 1
        send(connection, replies.map { $0 + "\n" }.joined())
        closeIfDone(connection)
    }

    private func send(_ connection: Connection, _ text: String) {
        connection.output.append(contentsOf: text.utf8)
        flush(connection)
    }

    private func flush(_ connection: Connection) {
        while !connection.output.isEmpty {
            let n = connection.output.withUnsafeBytes { Glibc.send(connection.fd, $0.baseAddress!, $0.count, Int32(MSG_NOSIGNAL)) }
            if n < 0 {
                if errno == EINTR { continue }
                if errno == EAGAIN {
                    // The client reads slowly: wait until its socket takes more.
                    if connection.writeSource == nil {
                        connection.writeSource = try? io.watch(connection.fd, for: .writable) { [self] _ in flush(connection) }
                    }
                    return
                }
                drop(connection) // EPIPE, ECONNRESET: the client is gone
                return
            }
            connection.output.removeFirst(n)
        }
        connection.writeSource?.cancel()
        connection.writeSource = nil
    }

    private func stopReading(_ connection: Connection) {
        connection.readSource?.cancel()
        connection.readSource = nil
    }

    private func closeIfDone(_ connection: Connection) {
        if connection.readSource == nil, connection.outstanding == 0, connection.output.isEmpty {
            drop(connection)
        }
    }

    private func drop(_ connection: Connection) {
        guard connections.removeValue(forKey: connection.fd) != nil else { return }
        stopReading(connection)
        connection.writeSource?.cancel()
        connection.writeSource = nil
        close(connection.fd) // after cancelling its sources, as DescriptorSource asks
    }

    // MARK: - Shutdown (any thread but daemon.io)

    /// Stops accepting connections and reading requests. Requests already read stay accepted:
    /// their batches are on the journal thread and will be answered.
    func stopAccepting() {
        try? io.sync { [self] in
            accepting = false
            listenSource?.cancel()
            listenSource = nil
            close(listener)
            unlink(path)
            for connection in connections.values { stopReading(connection) }
        }
    }

    /// After the journal drained: writes the last replies, closes every connection, ends the thread.
    func finish() {
        try? io.sync { [self] in
            for connection in Array(connections.values) {
                // Block briefly for a slow reader rather than drop a reply it is owed.
                var timeout = timeval(tv_sec: 2, tv_usec: 0)
                setsockopt(connection.fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
                let flags = fcntl(connection.fd, F_GETFL)
                _ = fcntl(connection.fd, F_SETFL, flags & ~O_NONBLOCK)
                flush(connection)
                drop(connection)
            }
        }
        io.stop(pending: .drain)
    }
}

/// One client. daemon.io only (`@unchecked Sendable` so the watch handlers can capture it; they
/// run on daemon.io).
private final class Connection: @unchecked Sendable {
    let fd: Int32
    var lines = LineSplitter()
    var output: [UInt8] = []
    /// Batches on the journal thread not yet answered.
    var outstanding = 0
    var readSource: DescriptorSource?
    var writeSource: DescriptorSource?

    init(fd: Int32) { self.fd = fd }
}
