/// The bounds the socket server puts on each client and on all of them together, so that no
/// client, slow or hostile, nor a crowd of them, can hold the daemon's memory, descriptors or
/// shutdown without limit.
///
/// Memory is counted where it is taken, and checked before it is taken: the bytes a read takes
/// in, the requests parsed from them (with room reserved for their replies while they are on the
/// journal thread or on their way back), and the replies waiting to be sent (``Connection/heldBytes``).
struct ClientLimits: Sendable, Equatable {
    /// A client that sends no complete request and reads no reply for this long is closed; nil:
    /// never. A client waiting for a reply the journal has not produced yet is not idle.
    var idleTimeout: Duration?
    /// The high watermark: while a client's replies waiting to be sent exceed this many bytes,
    /// the daemon reads none of its requests (SwiftNIO's `WriteBufferWaterMark`); it reads again
    /// once they are down to ``lowWatermark``. Replies still being built for requests read
    /// before the pause may take it past the mark, by at most what ``batchesInFlight`` batches
    /// reserve.
    var replyBufferBytes: Int
    /// After a shutdown began, clients whose replies are still unsent after this long are cut.
    var shutdownDeadline: Duration
    /// Connections served at once; one more is told `ERR too many clients` and closed.
    var maximumClients: Int = 256
    /// Memory held for all clients together: requests read and not yet parsed, batches on the
    /// journal thread or on their way back (with their replies' reserve), replies waiting to be
    /// sent. A read or a batch that would take the total past it first cuts the clients holding
    /// the most (never the one being read); when that one holds the most itself, it waits.
    var totalReplyBufferBytes: Int = 64 << 20
    /// A client with replies waiting that takes none of them for this long is cut; nil: never.
    var sendTimeout: Duration? = .seconds(30)
    /// A request line must end within this long of its first byte, or the client is cut
    /// (slowloris): bytes of a line not yet ended are not activity. nil: no bound.
    var requestTimeout: Duration? = .seconds(10)

    /// The low watermark: half the high one.
    var lowWatermark: Int { replyBufferBytes / 2 }

    /// Request batches a client may have on the journal thread (or on their way back) at once;
    /// past it the daemon stops reading that client until one is answered, and the kernel's
    /// socket buffer holds the client back.
    static let batchesInFlight = 4
    /// The most bytes read from a client at once.
    static let readSize = 16384
    /// The most requests in one batch: the rest of a read waits, counted, for the next batch.
    /// A read of 16 KiB of empty lines is 16,384 requests, each owed a 60-byte `ERR`.
    static let batchRequests = 256
    /// Bytes reserved per request in a batch on top of its text, until its reply arrives: the
    /// parsed request in the batch's array (at most 40) and its reply as a `String` in the array
    /// sent back (a heap string of at most 128 bytes with its 32-byte header, and its 16-byte
    /// slot), rounded up to malloc's 16-byte steps.
    static let bytesPerRequest = 256
    /// A read and the batch parsed from it: the least total memory that serves one client.
    static let batchReserve = readSize + batchRequests * bytesPerRequest
}
