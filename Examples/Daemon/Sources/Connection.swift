import LongThreads

/// One client of the socket server. daemon.io only (`@unchecked Sendable` so the watch handlers
/// can capture it; they run on daemon.io).
final class Connection: @unchecked Sendable {
    let fd: Int32
    var lines: LineSplitter
    /// Replies not yet taken by the kernel, bounded by ``ClientLimits/replyBufferBytes``.
    var output: [UInt8] = []
    /// Batches on the journal thread not yet answered.
    var outstanding = 0
    /// The last time the client sent a request or took some of its replies.
    var lastActivity: ContinuousClock.Instant
    var readSource: DescriptorSource?
    var writeSource: DescriptorSource?

    init(fd: Int32, allowsStall: Bool) {
        self.fd = fd
        lines = LineSplitter(allowsStall: allowsStall)
        lastActivity = .now
    }

    /// Waiting for nothing from the daemon and doing nothing itself since `lastActivity`.
    var isWaitingForReplies: Bool { outstanding > 0 }
}
