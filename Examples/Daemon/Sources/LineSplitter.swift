/// Cuts a byte stream into request lines, turning each into a request or an error reply.
/// A line over ``DaemonRequest/maximumLength`` is answered `ERR …too long` once and skipped up to
/// its newline, so a client sending garbage cannot grow the daemon's memory.
struct LineSplitter {
    private var partial: [UInt8] = []
    private var skippingLongLine = false
    /// Whether `STALL <ms>` is a request (`--debug-stall-requests`).
    let allowsStall: Bool

    init(allowsStall: Bool = false) {
        self.allowsStall = allowsStall
    }

    /// Feeds bytes; returns the requests completed by them, in order.
    mutating func feed(_ bytes: some Collection<UInt8>) -> [Result<DaemonRequest, DaemonReplyError>] {
        var results: [Result<DaemonRequest, DaemonReplyError>] = []
        for byte in bytes {
            if byte == UInt8(ascii: "\n") {
                if !skippingLongLine { results.append(DaemonRequest.parse(partial, allowsStall: allowsStall)) }
                partial.removeAll(keepingCapacity: true)
                skippingLongLine = false
            } else if !skippingLongLine {
                partial.append(byte)
                if partial.count > DaemonRequest.maximumLength {
                    results.append(.failure(.tooLong))
                    partial.removeAll(keepingCapacity: true)
                    skippingLongLine = true
                }
            }
        }
        return results
    }
}
