import Glibc
import LongThreads

/// One client of the socket server. daemon.io only (`@unchecked Sendable` so the watch handler
/// can capture it; it runs on daemon.io).
final class Connection: @unchecked Sendable {
    let fd: Int32
    var lines: LineSplitter
    /// Replies not yet taken by the kernel, from `sent` on; bounded by
    /// ``ClientLimits/replyBufferBytes``.
    private(set) var output: [UInt8] = []
    private(set) var sent = 0
    /// Batches on the journal thread not yet answered, at most ``ClientLimits/batchesInFlight``.
    var outstanding = 0
    /// Still reading requests: false after the client's end of stream, at shutdown, or once cut.
    var reading = true
    /// The last time the client sent a request or took some of its replies (daemon.io's clock).
    var lastActivity: ContinuousClock.Instant
    /// The connection's one source: readable while it reads, writable while replies wait.
    var source: DescriptorSource?

    /// `now`: on daemon.io's clock (`LongThread.now`), which the idle timer follows.
    init(fd: Int32, allowsStall: Bool, now: ContinuousClock.Instant) {
        self.fd = fd
        lines = LineSplitter(allowsStall: allowsStall)
        lastActivity = now
    }

    /// Waiting for nothing from the daemon and doing nothing itself since `lastActivity`.
    var isWaitingForReplies: Bool { outstanding > 0 }

    /// Bytes of replies the kernel has not taken yet.
    var unsent: Int { output.count - sent }

    /// What the source should wait for now.
    var wantedEvents: DescriptorEvents {
        var events: DescriptorEvents = []
        // Reading goes on while replies wait: a client may send everything before it reads.
        // Its unsent replies are bounded by the cut (ClientLimits.replyBufferBytes) instead.
        if reading, outstanding < ClientLimits.batchesInFlight { events.insert(.readable) }
        if unsent > 0 { events.insert(.writable) }
        return events
    }

    /// Queues replies, each with its newline.
    func queue(_ replies: [String]) {
        for reply in replies {
            output.append(contentsOf: reply.utf8)
            output.append(UInt8(ascii: "\n"))
        }
    }

    /// Frees the replies not sent (the client is gone), at once: batches still in flight on the
    /// journal thread keep the connection itself alive until they are answered.
    func discardOutput() {
        output = []
        sent = 0
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
}
