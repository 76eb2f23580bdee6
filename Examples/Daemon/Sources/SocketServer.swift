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
/// Each connection has one descriptor source: readable while the server may take more of its
/// requests, writable while replies wait for room in its socket (``DescriptorSource/enable(_:)``).
/// Backpressure, as SwiftNIO's channels do it: past ``ClientLimits/replyBufferBytes`` of unsent
/// replies a client is not read until they are down to half, so a client that reads, however
/// slowly, gets every reply, and one that stops reading is cut after ``ClientLimits/sendTimeout``.
///
/// Each client is bounded by ``ClientLimits``: an idle client is closed, a request line must
/// end within ``ClientLimits/requestTimeout`` (bytes of a line are not activity), a client with
/// ``ClientLimits/batchesInFlight`` batches on the journal is not read until one is answered
/// (one timer serves every deadline, due at the first; an idle daemon has none), and a shutdown
/// waits for the clients' last replies up to a deadline, then cuts whoever is left. In all: at
/// most ``ClientLimits/maximumClients`` clients (one more is refused with an `ERR` line) and
/// ``ClientLimits/totalReplyBufferBytes`` of memory held for them, counted where it is taken
/// (`SocketServer+Memory.swift`). Out of descriptors, it stops accepting until a client leaves
/// or ``acceptRetry`` passes, rather than spin.
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
    let logger: Logger
    private let listener: Int32
    /// `connections.count`, published for status lines read from other threads.
    private let publishedClients = Atomic<Int>(0)

    // MARK: daemon.io only
    private var listenSource: DescriptorSource?
    var connections: [Int32: Connection] = [:] {
        didSet { publishedClients.store(connections.count, ordering: .relaxed) }
    }
    var accepting = true
    /// Out of descriptors: the listener waits for nothing until a client leaves or the retry.
    private var acceptPaused = false
    private var acceptRetryTimer: LongThreadTimer?
    /// Held while accepting, given back at the limit: room for Dispatch and CF while paused.
    private var reserve = DescriptorReserve()
    /// Due to trim malloc's arenas after large reply buffers were freed.
    var trimTimer: LongThreadTimer?
    /// Accepts refused since the last one that worked (logged once per episode).
    private var refusalsWhilePaused = 0
    var loggedClientLimit = false
    /// Memory held for all clients together (``Connection/heldBytes``, dropped clients' batches
    /// in flight included), bounded by ``ClientLimits/totalReplyBufferBytes``.
    var totalHeld = 0
    /// Clients not read until memory is given back (``Connection/waitingForRoom``).
    var waitingForRoom: Set<Int32> = []
    /// How long accepting stays paused after EMFILE unless a client leaves first.
    static let acceptRetry: Duration = .milliseconds(250)
    /// Due at the first client deadline (idle, request, send timeout); nil while none is due.
    var deadlineCheck: (timer: LongThreadTimer, at: ContinuousClock.Instant)?
    /// Due at the shutdown deadline, once a shutdown waits for clients.
    private var shutdownTimer: LongThreadTimer?

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
        // The reserve first: a client may have the last descriptors only while it is held.
        if accepting, !acceptPaused, !reserve.fill() {
            reserve.release()
            return pauseAccepting(errno: EMFILE)
        }
        while accepting, !acceptPaused {
            // accept4 would do both flags at once, but Glibc's module hides it (_GNU_SOURCE).
            let fd = accept(listener, nil, nil)
            if fd < 0 {
                switch errno {
                case EINTR, ECONNABORTED: continue
                case EMFILE, ENFILE, ENOBUFS, ENOMEM:
                    let refusal = errno
                    reserve.release()
                    return pauseAccepting(errno: refusal)
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
        scheduleDeadlineCheck(for: connection)
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
    /// The reserve is given back by then (``DescriptorReserve``).
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
    func resumeAccepting() {
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

    // MARK: - Shutdown (daemon.io)

    /// Stops accepting connections and reading requests, then waits for the clients' last
    /// replies, at most ``ClientLimits/shutdownDeadline``. Requests already read stay accepted:
    /// their batches are on the journal thread (still running) and are answered.
    func beginShutdown() {
        guard accepting else { return }
        accepting = false
        listenSource?.cancel()
        listenSource = nil
        acceptRetryTimer?.cancel()
        acceptRetryTimer = nil
        close(listener)
        reserve.release()
        unlink(path)
        cancelDeadlineCheck()
        for connection in Array(connections.values) {
            stopReading(connection)
            submitBatches(connection) // what it had read is accepted: parsed and answered
            closeIfDone(connection)
        }
        guard !connections.isEmpty else { return finishShutdown() }
        logger.info("shutdown: answering the clients' last requests", metadata: [
            "clients": "\(connections.count)", "deadline": "\(limits.shutdownDeadline)",
        ])
        shutdownTimer = try? io.perform(after: limits.shutdownDeadline) { [self] in
            let late = Array(connections.values)
            logger.warning("shutdown deadline: cut clients whose replies were still unsent", metadata: [
                "clients": "\(late.count)", "unsent.bytes": "\(late.reduce(0) { $0 + $1.unsent })",
            ])
            for connection in late { drop(connection) }
        }
    }

    /// Every client is answered or cut: the thread may end.
    func finishShutdown() {
        shutdownTimer?.cancel()
        shutdownTimer = nil
        io.stop(waitUntilDone: false)
    }
}
