/// Cuts a byte stream into request lines, turning each into a request or an error reply.
/// A line over ``DaemonRequest/maximumLength`` is answered `ERR …too long` once and skipped up to
/// its newline, so a client sending garbage cannot grow the daemon's memory. Given a bound on
/// skipping (the socket's clients, ``maximumSkippedBytes``), a line still without a newline that
/// many bytes later is an endless line (``isEndless``), and nothing more is taken from the stream.
struct LineSplitter {
    private var partial: [UInt8] = []
    /// Bytes of an over-long line skipped so far; nil while not skipping.
    private var skipped: Int?
    /// Whether `STALL <ms>` is a request (`--debug-stall-requests`).
    let allowsStall: Bool
    /// How much of an over-long line is skipped before it is endless; nil: no bound.
    let skipLimit: Int?
    /// An over-long line went on past ``skipLimit``: the splitter takes no more bytes.
    private(set) var isEndless = false

    /// The bound on skipping for the socket's clients: 16 lines' worth.
    static let maximumSkippedBytes = 16 * DaemonRequest.maximumLength

    /// `skipLimit`: how much of an over-long line is skipped before it is endless; nil (standard
    /// input, which the operator chose) skips any amount.
    init(allowsStall: Bool = false, skipLimit: Int? = nil) {
        self.allowsStall = allowsStall
        self.skipLimit = skipLimit
    }

    /// Whether a line has begun and not ended (a line being skipped included).
    var hasPartialLine: Bool { !partial.isEmpty || skipped != nil }

    /// The memory kept for the line not yet ended (its buffer's capacity).
    var partialBytes: Int { partial.capacity }

    /// Feeds bytes; returns the requests completed by them, in order.
    mutating func feed(_ bytes: some Collection<UInt8>) -> [Result<DaemonRequest, DaemonReplyError>] {
        feed(bytes, maximumRequests: .max).requests
    }

    /// Feeds bytes until `maximumRequests` requests are complete (or the line is endless);
    /// returns them and how many of the bytes were taken. The rest is for a later call.
    mutating func feed(_ bytes: some Collection<UInt8>, maximumRequests: Int)
        -> (requests: [Result<DaemonRequest, DaemonReplyError>], consumed: Int) {
        var results: [Result<DaemonRequest, DaemonReplyError>] = []
        var consumed = 0
        for byte in bytes {
            if results.count >= maximumRequests || isEndless { break }
            consumed += 1
            if byte == UInt8(ascii: "\n") {
                if skipped == nil { results.append(DaemonRequest.parse(partial, allowsStall: allowsStall)) }
                partial.removeAll(keepingCapacity: true)
                skipped = nil
            } else if let count = skipped {
                skipped = count + 1
                if let skipLimit, count + 1 > skipLimit { isEndless = true }
            } else {
                partial.append(byte)
                if partial.count > DaemonRequest.maximumLength {
                    results.append(.failure(.tooLong))
                    partial = [] // its 4 KiB go back: the line will not be kept
                    skipped = 0
                }
            }
        }
        return (results, consumed)
    }
}
