/// The bounds the socket server puts on each client and on all of them together, so that no
/// client, slow or hostile, nor a crowd of them, can hold the daemon's memory, descriptors or
/// shutdown without limit.
struct ClientLimits: Sendable, Equatable {
    /// A client that sends nothing and reads no reply for this long is closed; nil: never.
    /// A client waiting for a reply the journal has not produced yet is not idle.
    var idleTimeout: Duration?
    /// A client whose replies waiting to be sent exceed this many bytes is cut: it is not
    /// reading them, and they would otherwise queue without limit.
    var replyBufferBytes: Int
    /// After a shutdown began, clients whose replies are still unsent after this long are cut.
    var shutdownDeadline: Duration
    /// Connections served at once; one more is told `ERR too many clients` and closed.
    var maximumClients: Int = 256
    /// Replies waiting to be sent, all clients together. A client whose replies take the total
    /// past it (one with unsent replies of its own) is cut.
    var totalReplyBufferBytes: Int = 64 << 20

    /// Request batches (one per read of at most ``readSize`` bytes) a client may have on the
    /// journal thread at once; past it the daemon stops reading from that client until one is
    /// answered, and the kernel's socket buffer holds the client back.
    static let batchesInFlight = 4
    /// The most bytes read from a client at once: one batch of requests.
    static let readSize = 16384
}
