import Glibc
import Logging
import LongThreads
import ServiceLifecycle
import CSystemd
import Synchronization

/// The Unix-domain socket side: a listener and its connections, all on one LongThread,
/// `daemon.io`, through descriptor sources: the thread sleeps in the kernel until a descriptor is
/// ready, with no thread per client and no polling.
///
/// Each read's complete lines go to the journal as one batch; the journal's replies come back to
/// this thread, so each connection's replies are written in request order.
///
/// Each connection has one descriptor source: readable while the server reads its requests,
/// writable while replies wait for room in its socket (``DescriptorSource/enable(_:)``), so a
/// client that reads slowly, or only after sending everything, gets every reply.
///
/// Each client is bounded by ``ClientLimits``: an idle client is closed (one timer for all of
/// them, due at the earliest deadline, so an idle daemon has no timer at all), a client that does
/// not read its replies is cut once they pass the buffer limit, one with
/// ``ClientLimits/batchesInFlight`` batches on the journal is not read until one is answered, and
/// a shutdown waits for the clients' last replies up to a deadline, then cuts whoever is left.
/// In all: at most ``ClientLimits/maximumClients`` clients (one more is refused with an `ERR`
/// line) and ``ClientLimits/totalReplyBufferBytes`` of unsent replies. Out of descriptors, it
/// stops accepting until a client leaves or ``acceptRetry`` passes, rather than spin.
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
    /// Out of descriptors: the listener waits for nothing until a client leaves or the retry.
    private var acceptPaused = false
    private var acceptRetryTimer: LongThreadTimer?
    /// Due to trim malloc's arenas after large reply buffers were freed.
    private var trimTimer: LongThreadTimer?
    /// Accepts refused since the last one that worked (logged once per episode).
    private var refusalsWhilePaused = 0
    private var loggedClientLimit = false
    /// Replies waiting to be sent, all clients together (``ClientLimits/totalReplyBufferBytes``).
    private var queuedBytes = 0
    /// How long accepting stays paused after EMFILE unless a client leaves first.
    static let acceptRetry: Duration = .milliseconds(250)
    /// Due when the idlest client would reach the idle timeout; nil while there are no clients.
    private var idleTimer: LongThreadTimer?
    /// Due at the shutdown deadline, once a shutdown waits for clients.
    private var deadlineTimer: LongThreadTimer?

    /// Binds and listens on the calling thread (so errors reach the caller before anything runs),
    /// then watches the listener on `daemon.io`: `io` when given (a test's thread, on virtual
    /// time: the idle timeout reads `io.now`), else a thread made with `options`.
    init(path: String, journal: Journal, limits: ClientLimits, options: LongThread.Options = .init(), io: LongThread? = nil,
         logger: Logger) throws {
        self.path = path
        self.journal = journal
        self.limits = limits
        self.logger = logger
        listener = try Self.listen(on: path)
        do {
            self.io = try io ?? LongThread(name: "daemon.io", options: options)
            let io = self.io
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

    // MARK: - daemon.io: accepting

    private func acceptReady() {
        while accepting, !acceptPaused {
            // accept4 would do both flags at once, but Glibc's module hides it (_GNU_SOURCE).
            let fd = accept(listener, nil, nil)
            if fd < 0 {
                switch errno {
                case EINTR, ECONNABORTED: continue
                case EMFILE, ENFILE, ENOBUFS, ENOMEM: return pauseAccepting(errno: errno)
                default: return // EAGAIN: drained
                }
            }
            if refusalsWhilePaused > 0 {
                logger.notice("accepting again", metadata: ["attempts.refused": "\(refusalsWhilePaused)"])
                refusalsWhilePaused = 0
            }
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            if connections.count >= limits.maximumClients {
                refuse(fd)
                continue
            }
            serve(fd)
        }
    }

    private func serve(_ fd: Int32) {
        let connection = Connection(fd: fd, allowsStall: journal.allowsStall, now: io.now)
        connections[fd] = connection
        do {
            connection.source = try io.watch(fd, for: .readable) { [self] events in ready(connection, events) }
        } catch {
            logger.error("client closed: cannot watch it", metadata: ["client.fd": "\(fd)", "error": "\(error)"])
            drop(connection)
            return
        }
        scheduleIdleCheck()
    }

    /// One more client than ``ClientLimits/maximumClients``: told why, then closed. Its socket is
    /// new and empty, so the kernel takes the line at once.
    private func refuse(_ fd: Int32) {
        let line = Array("ERR too many clients (limit \(limits.maximumClients)); try again later\n".utf8)
        _ = line.withUnsafeBytes { Glibc.send(fd, $0.baseAddress!, $0.count, Int32(MSG_NOSIGNAL)) }
        close(fd)
        if !loggedClientLimit {
            loggedClientLimit = true
            logger.warning("client refused: too many clients", metadata: ["limit": "\(limits.maximumClients)"])
        }
    }

    /// Out of descriptors (or kernel memory): the pending connection stays in the backlog, and
    /// the listener, still readable, would call back at once, forever. So it stops waiting for
    /// readable until a client leaves or ``acceptRetry`` passes, and says so once per episode.
    private func pauseAccepting(errno error: Int32) {
        acceptPaused = true
        refusalsWhilePaused += 1
        if refusalsWhilePaused == 1 {
            logger.error("cannot accept clients: out of descriptors; retrying when a client leaves or every \(Self.acceptRetry)", metadata: [
                "errno": "\(error)", "clients": "\(connections.count)",
            ])
        }
        setListenerEvents(enabled: false)
        do {
            acceptRetryTimer = try io.perform(after: Self.acceptRetry) { [self] in
                acceptRetryTimer = nil
                resumeAccepting()
            }
        } catch {
            // Only a stopping thread refuses the timer: nothing to accept any more.
        }
    }

    /// A descriptor may be free again: try the backlog.
    private func resumeAccepting() {
        guard acceptPaused else { return }
        acceptPaused = false
        acceptRetryTimer?.cancel()
        acceptRetryTimer = nil
        if accepting { setListenerEvents(enabled: true) }
    }

    private func setListenerEvents(enabled: Bool) {
        guard let listenSource else { return }
        do {
            if enabled { try listenSource.enable(.readable) } else { try listenSource.disable(.readable) }
        } catch {
            logger.critical("the listener's source refused a change; not accepting", metadata: ["error": "\(error)"])
        }
    }

    // MARK: - daemon.io: connections

    /// The connection's one source fired: replies out first (room in the client's socket), then
    /// requests in.
    private func ready(_ connection: Connection, _ events: DescriptorEvents) {
        if events.contains(.writable) || !connection.reading { flush(connection) }
        if connection.reading, connections[connection.fd] === connection { readReady(connection) }
    }

    private func readReady(_ connection: Connection) {
        var buffer = [UInt8](repeating: 0, count: ClientLimits.readSize)
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
        connection.lastActivity = io.now
        let batch = connection.lines.feed(buffer[0..<n])
        if batch.isEmpty { return }
        connection.outstanding += 1
        updateEvents(connection) // at the batch bound, it stops reading until an answer
        do {
            try journal.submit(batch) { [self] replies in
                // Journal thread -> daemon.io: replies are written in the order batches ran.
                // Refused only once daemon.io stops, which a shutdown does after every client
                // was answered or cut: nobody is left to answer.
                try? io.perform { [self] in answer(connection, replies) }
            }
        } catch {
            answer(connection, batch.map { _ in DaemonReplyError.shuttingDown.reply })
        }
    }

    private func answer(_ connection: Connection, _ replies: [String]) {
        connection.outstanding -= 1
        guard connections[connection.fd] === connection else {
            // Cut or gone meanwhile: these replies are dropped. The last batch in flight lets the
            // connection go: what its batches allocated on the journal thread is free from now.
            if connection.outstanding == 0 { scheduleTrim() }
            return
        }
        let before = connection.unsent
        connection.queue(replies)
        queuedBytes += connection.unsent - before
        flush(connection)
        guard connections[connection.fd] === connection else { return }
        if connection.unsent > limits.replyBufferBytes {
            cut(connection, "client cut: its unread replies passed the reply buffer limit", limit: limits.replyBufferBytes)
        } else if queuedBytes > limits.totalReplyBufferBytes, connection.unsent > 0 {
            cut(connection, "client cut: unread replies of all clients passed the total limit", limit: limits.totalReplyBufferBytes)
        }
    }

    private func cut(_ connection: Connection, _ message: Logger.Message, limit: Int) {
        logger.warning(message, metadata: [
            "client.fd": "\(connection.fd)", "unsent.bytes": "\(connection.unsent)",
            "queued.bytes": "\(queuedBytes)", "limit.bytes": "\(limit)",
        ])
        drop(connection)
    }

    /// Sends what the client's socket takes; waits for writable (on the connection's one
    /// source) while replies remain, and stops waiting once they are all sent.
    private func flush(_ connection: Connection) {
        while connection.unsent > 0 {
            let n = connection.send()
            if n < 0 {
                if errno == EINTR { continue }
                if errno == EAGAIN { break } // the client reads slowly: wait until its socket takes more
                drop(connection) // EPIPE, ECONNRESET: the client is gone
                return
            }
            queuedBytes -= n
            connection.lastActivity = io.now
        }
        updateEvents(connection)
        closeIfDone(connection)
    }

    /// Makes the connection's source wait for what it needs now (``Connection/wantedEvents``).
    private func updateEvents(_ connection: Connection) {
        guard let source = connection.source, connections[connection.fd] === connection else { return }
        let wanted = connection.wantedEvents, current = source.events
        do {
            if !wanted.subtracting(current).isEmpty { try source.enable(wanted.subtracting(current)) }
            if !current.subtracting(wanted).isEmpty { try source.disable(current.subtracting(wanted)) }
        } catch {
            logger.error("client cut: its source refused a change", metadata: ["client.fd": "\(connection.fd)", "error": "\(error)"])
            drop(connection)
        }
    }

    private func stopReading(_ connection: Connection) {
        connection.reading = false
        updateEvents(connection)
    }

    private func closeIfDone(_ connection: Connection) {
        if !connection.reading, connection.outstanding == 0, connection.unsent == 0 {
            drop(connection)
        }
    }

    private func drop(_ connection: Connection) {
        guard connections[connection.fd] === connection else { return }
        connections[connection.fd] = nil
        connection.reading = false
        let unsent = connection.unsent
        queuedBytes -= unsent
        // Freed before the trim: the connection itself may outlive the drop (its source's
        // handler, batches in flight), and its buffer with it.
        connection.discardOutput()
        if unsent > 65536 { scheduleTrim() }
        connection.source?.cancel()
        connection.source = nil
        close(connection.fd) // after cancelling its source, as DescriptorSource asks
        if connections.count < limits.maximumClients { loggedClientLimit = false }
        resumeAccepting() // a descriptor is free
        if connections.isEmpty {
            idleTimer?.cancel()
            idleTimer = nil
            if !accepting { finishShutdown() }
        }
    }

    /// Gives the memory of freed reply buffers back to the system, once for the drops of the
    /// next moment. glibc keeps freed memory in the arena of the thread that allocated it
    /// (replies are built on the journal thread), so without a trim a daemon that queued 300
    /// clients' replies keeps that memory after they leave.
    private func scheduleTrim() {
        guard trimTimer == nil else { return }
        do {
            trimTimer = try io.perform(after: .milliseconds(100)) { [self] in
                trimTimer = nil
                _ = malloc_trim(0)
            }
        } catch {
            // Only a stopping thread refuses the timer; the process ends soon.
        }
    }

    // MARK: - Idle timeout (daemon.io)

    /// Arms the idle timer for the idlest client, unless it is armed or there is no bound.
    private func scheduleIdleCheck() {
        guard let timeout = limits.idleTimeout, accepting, idleTimer == nil,
              let idlest = connections.values.lazy.map(\.lastActivity).min() else { return }
        let delay = max(idlest + timeout - io.now, .zero)
        idleTimer = try? io.perform(after: delay) { [self] in
            idleTimer = nil
            closeIdleClients(timeout: timeout)
            scheduleIdleCheck()
        }
    }

    private func closeIdleClients(timeout: Duration) {
        let now = io.now
        for connection in Array(connections.values) where now - connection.lastActivity >= timeout {
            if connection.isWaitingForReplies {
                connection.lastActivity = now // the daemon owes it replies: it is not idle
                continue
            }
            logger.notice("client closed: idle", metadata: [
                "client.fd": "\(connection.fd)", "idle.timeout": "\(timeout)", "unsent.bytes": "\(connection.unsent)",
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
        acceptRetryTimer?.cancel()
        acceptRetryTimer = nil
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
                "clients": "\(late.count)", "unsent.bytes": "\(late.reduce(0) { $0 + $1.unsent })",
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
