import Glibc
import LongThreads

/// One client of the socket server. daemon.io only (`@unchecked Sendable` so the watch handler
/// can capture it; it runs on daemon.io).
final class Connection: @unchecked Sendable {
    let fd: Int32
    var lines: LineSplitter
    /// Replies not yet taken by the kernel, from `sent` on.
    private(set) var output: [UInt8] = []
    private(set) var sent = 0
    /// Bytes read and not parsed yet: one read is parsed ``ClientLimits/batchRequests`` lines at
    /// a time, and the rest waits here (the read's whole buffer with it) until a batch slot and
    /// room in the total free up. The connection reads again only once it is empty.
    var unparsed: ArraySlice<UInt8> = []
    /// Batches on the journal thread or on their way back, at most ``ClientLimits/batchesInFlight``.
    var outstanding = 0
    /// What those batches reserve: their requests' bytes and their replies' room.
    var inFlightBytes = 0
    /// Still reading requests: false after the client's end of stream, at shutdown, or once cut.
    var reading = true
    /// Backpressure: its unsent replies passed the high watermark, and have not yet fallen to
    /// the low one; its requests are not read meanwhile.
    var pausedForReplies = false
    /// A read would take the total past its limit, and this client holds the most: it is not
    /// read until memory is given back.
    var waitingForRoom = false
    /// The last time the client sent a complete request or took some of its replies.
    var lastActivity: ContinuousClock.Instant
    /// When the line not ended yet began; nil between lines. Bytes of it are not activity.
    var lineStarted: ContinuousClock.Instant?
    /// When the client last took some of its replies, or when replies began to wait for it.
    var lastSendProgress: ContinuousClock.Instant
    /// What the server's total holds for this connection (``heldBytes`` when last counted).
    var counted = 0
    /// The connection's one source: readable while it reads, writable while replies wait. Nil
    /// once the client hung up while it could not be read (``hungUp``).
    var source: DescriptorSource?
    /// The client closed its socket (hang-up): its replies have no reader and are not kept;
    /// what it sent is still read and stored.
    private(set) var hungUp = false
    /// A read of a hung-up client is queued on daemon.io (one at a time).
    var readQueued = false

    /// `now`: on daemon.io's clock (`LongThread.now`), which the timeouts follow.
    init(fd: Int32, allowsStall: Bool, now: ContinuousClock.Instant) {
        self.fd = fd
        lines = LineSplitter(allowsStall: allowsStall, skipLimit: LineSplitter.maximumSkippedBytes)
        lastActivity = now
        lastSendProgress = now
    }

    /// Waiting for replies the journal owes it: not idle.
    var isWaitingForReplies: Bool { outstanding > 0 }

    /// Bytes of replies the kernel has not taken yet.
    var unsent: Int { output.count - sent }

    /// The memory the daemon holds for this client: the read not parsed yet (its whole buffer),
    /// the line not ended yet, the batches in flight, and the reply buffer (its capacity).
    var heldBytes: Int {
        (unparsed.isEmpty ? 0 : ClientLimits.readSize) + lines.partialBytes + inFlightBytes + output.capacity
    }

    /// What cutting the client gives back at once (its batches in flight are freed when they
    /// come back).
    var releasableBytes: Int { heldBytes - inFlightBytes }

    /// Whether to read the client's socket now: it reads, has a batch slot, is under the high
    /// watermark, has parsed everything it read, and is not waiting for room in the total.
    var mayRead: Bool {
        reading && outstanding < ClientLimits.batchesInFlight && !pausedForReplies && unparsed.isEmpty && !waitingForRoom
    }

    /// Whether a batch may be parsed from ``unparsed`` now.
    var mayParse: Bool {
        !unparsed.isEmpty && outstanding < ClientLimits.batchesInFlight && !pausedForReplies && !lines.isEndless
    }

    /// What the source should wait for now.
    var wantedEvents: DescriptorEvents {
        var events: DescriptorEvents = []
        if mayRead { events.insert(.readable) }
        if unsent > 0 { events.insert(.writable) }
        return events
    }

    /// The client hung up: unsent replies are dropped, and later ones are not kept.
    func peerClosed() {
        hungUp = true
        output = []
        sent = 0
    }

    /// Queues replies, each with its newline (none once the client has hung up).
    func queue(_ replies: [String]) {
        guard !hungUp else { return }
        for reply in replies {
            output.append(contentsOf: reply.utf8)
            output.append(UInt8(ascii: "\n"))
        }
    }

    /// Frees what is held for the client but its batches in flight (the client is gone), at
    /// once: those batches keep the connection itself alive until they are answered.
    func discardBuffers() {
        output = []
        sent = 0
        unparsed = []
    }

    /// Gives the kernel what it takes of the unsent replies: the bytes sent, or -1 with `errno`
    /// set (EAGAIN: the client's socket is full). Sent bytes are dropped once all are sent, or
    /// once they are most of the buffer, so that sending is linear and a drained buffer frees
    /// its memory.
    func send() -> Int {
        let n = output[sent...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress!, $0.count, Int32(MSG_NOSIGNAL)) }
        guard n > 0 else { return n }
        sent += n
        if sent == output.count {
            output = []
            sent = 0
        } else if sent > output.count / 2, sent > 65536 {
            output.removeFirst(sent)
            sent = 0
        }
        return n
    }

    /// The first of the client's deadlines under `limits`, and what passing it means.
    func deadline(_ limits: ClientLimits) -> (at: ContinuousClock.Instant, kind: Deadline)? {
        var first: (at: ContinuousClock.Instant, kind: Deadline)?
        func consider(_ instant: ContinuousClock.Instant, _ kind: Deadline) {
            if first.map({ instant < $0.at }) ?? true { first = (instant, kind) }
        }
        if let timeout = limits.idleTimeout, !isWaitingForReplies { consider(lastActivity + timeout, .idle) }
        if let timeout = limits.requestTimeout, let lineStarted { consider(lineStarted + timeout, .request) }
        if let timeout = limits.sendTimeout, unsent > 0 { consider(lastSendProgress + timeout, .send) }
        return first
    }

    /// The bound a client's deadline enforces.
    enum Deadline {
        /// No complete request and no reply taken for the idle timeout: closed.
        case idle
        /// A request line not ended within the request timeout: cut.
        case request
        /// Replies waiting and none taken for the send timeout: cut.
        case send
    }
}
