import Glibc
import Logging
import LongThreads
import ServiceLifecycle
import Synchronization

/// The Unix-domain socket side: a listener and its connections, all on one LongThread,
/// `daemon.io`, through descriptor sources: the thread sleeps in the kernel until a descriptor is
/// ready, with no thread per client and no polling.
///
/// Each read's complete lines go to the journal as one batch; the journal's replies come back to
/// this thread, so each connection's replies are written in request order.
///
/// Each client is bounded by ``ClientLimits``: an idle client is closed (one timer for all of
/// them, due at the earliest deadline, so an idle daemon has no timer at all), a client that does
/// not read its replies is cut once they pass the buffer limit, and a shutdown waits for the
/// clients' last replies up to a deadline, then cuts whoever is left.
///
/// As a `Service`, it stops itself: a graceful shutdown stops accepting and reading at once,
/// and its LongThread ends once every client has been answered (or cut at the deadline). A plain
/// `LongThreadService` would end the thread at once, before the journal's last replies come back.
final class SocketServer: Service, @unchecked Sendable {
    // MARK: Immutable
    let io: LongThread
    let journal: Journal
    let path: String
    let limits: ClientLimits
    private let logger: Logger
    private let listener: Int32
    /// `connections.count`, published for status lines read from other threads.
    private let publishedClients = Atomic<Int>(0)

    // MARK: daemon.io only
    private var listenSource: DescriptorSource?
    private var connections: [Int32: Connection] = [:] {
        didSet { publishedClients.store(connections.count, ordering: .relaxed) }
    }
    private var accepting = true
    /// Due when the idlest client would reach the idle timeout; nil while there are no clients.
    private var idleTimer: LongThreadTimer?
    /// Due at the shutdown deadline, once a shutdown waits for clients.
    private var deadlineTimer: LongThreadTimer?

    /// Binds and listens on the calling thread (so errors reach the caller before anything runs),
    /// then watches the listener on `daemon.io`.
    init(path: String, journal: Journal, limits: ClientLimits, options: LongThread.Options = .init(), logger: Logger) throws {
        self.path = path
        self.journal = journal
        self.limits = limits
        self.logger = logger
        listener = try Self.listen(on: path)
        do {
            io = try LongThread(name: "daemon.io", options: options)
            try io.sync { [self] in
                listenSource = try io.watch(listener, for: .readable) { [self] _ in acceptReady() }
            }
        } catch {
            close(listener)
            unlink(path)
            throw error
        }
    }

    /// The number of connected clients. Any thread.
    var clientCount: Int { publishedClients.load(ordering: .relaxed) }

    /// Serves until a graceful shutdown has answered or cut every client; cancellation stops
    /// the thread at once, dropping what clients were owed.
    func run() async {
        await withTaskCancellationHandler {
            await withGracefulShutdownHandler {
                _ = await io.waitUntilExit()
            } onGracefulShutdown: { [self] in
                try? io.perform { [self] in beginShutdown() } // throws only if it is stopping already
            }
        } onCancel: { [io] in
            io.stop(waitUntilDone: false, pending: .discard)
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
            let connection = Connection(fd: fd, allowsStall: journal.allowsStall)
            connections[fd] = connection
            do {
                connection.readSource = try io.watch(fd, for: .readable) { [self] _ in readReady(connection) }
            } catch {
                drop(connection)
                continue
            }
            scheduleIdleCheck()
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
        connection.lastActivity = .now
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
        guard connections[connection.fd] === connection else { return } // cut meanwhile
        connection.output.append(contentsOf: replies.map { $0 + "\n" }.joined().utf8)
        flush(connection)
        if connection.output.count > limits.replyBufferBytes {
            logger.warning("client cut: its unread replies passed the reply buffer limit", metadata: [
                "client.fd": "\(connection.fd)", "unsent.bytes": "\(connection.output.count)", "limit.bytes": "\(limits.replyBufferBytes)",
            ])
            drop(connection)
            return
        }
        closeIfDone(connection)
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
            connection.lastActivity = .now
        }
        connection.writeSource?.cancel()
        connection.writeSource = nil
        closeIfDone(connection)
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
        guard connections[connection.fd] === connection else { return }
        connections[connection.fd] = nil
        stopReading(connection)
        connection.writeSource?.cancel()
        connection.writeSource = nil
        close(connection.fd) // after cancelling its sources, as DescriptorSource asks
        if connections.isEmpty {
            idleTimer?.cancel()
            idleTimer = nil
            if !accepting { finishShutdown() }
        }
    }

    // MARK: - Idle timeout (daemon.io)

    /// Arms the idle timer for the idlest client, unless it is armed or there is no bound.
    private func scheduleIdleCheck() {
        guard let timeout = limits.idleTimeout, accepting, idleTimer == nil,
              let idlest = connections.values.lazy.map(\.lastActivity).min() else { return }
        let delay = max(idlest + timeout - .now, .zero)
        idleTimer = try? io.perform(after: delay) { [self] in
            idleTimer = nil
            closeIdleClients(timeout: timeout)
            scheduleIdleCheck()
        }
    }

    private func closeIdleClients(timeout: Duration) {
        let now = ContinuousClock.now
        for connection in Array(connections.values) where now - connection.lastActivity >= timeout {
            if connection.isWaitingForReplies {
                connection.lastActivity = now // the daemon owes it replies: it is not idle
                continue
            }
            logger.notice("client closed: idle", metadata: [
                "client.fd": "\(connection.fd)", "idle.timeout": "\(timeout)", "unsent.bytes": "\(connection.output.count)",
            ])
            drop(connection)
        }
    }

    // MARK: - Shutdown (daemon.io)

    /// Stops accepting connections and reading requests, then waits for the clients' last
    /// replies, at most ``ClientLimits/shutdownDeadline``. Requests already read stay accepted:
    /// their batches are on the journal thread (still running) and are answered.
    private func beginShutdown() {
        guard accepting else { return }
        accepting = false
        listenSource?.cancel()
        listenSource = nil
        close(listener)
        unlink(path)
        idleTimer?.cancel()
        idleTimer = nil
        for connection in Array(connections.values) {
            stopReading(connection)
            closeIfDone(connection)
        }
        guard !connections.isEmpty else { return finishShutdown() }
        logger.info("shutdown: answering the clients' last requests", metadata: [
            "clients": "\(connections.count)", "deadline": "\(limits.shutdownDeadline)",
        ])
        deadlineTimer = try? io.perform(after: limits.shutdownDeadline) { [self] in
            let late = Array(connections.values)
            logger.warning("shutdown deadline: cut clients whose replies were still unsent", metadata: [
                "clients": "\(late.count)", "unsent.bytes": "\(late.reduce(0) { $0 + $1.output.count })",
            ])
            for connection in late { drop(connection) }
        }
    }

    /// Every client is answered or cut: the thread may end.
    private func finishShutdown() {
        deadlineTimer?.cancel()
        deadlineTimer = nil
        io.stop(waitUntilDone: false)
    }
}
