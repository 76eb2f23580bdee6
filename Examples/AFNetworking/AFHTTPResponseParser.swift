/// An incremental HTTP/1.1 response parser: feed it the bytes as they arrive, in pieces of any
/// size, and it says when one response is complete.
///
/// What it understands (RFC 9112, the client side):
/// - the status line and header fields (names lowercased; repeated fields joined with `, `);
/// - interim `1xx` responses (`100 Continue`, `103 Early Hints`), skipped: their status codes are
///   kept in ``interimStatusCodes`` and the final response is the one returned; at most
///   ``maximumInterimResponses`` of them;
/// - the body framed by `Transfer-Encoding: chunked` (chunk extensions ignored, trailer fields
///   kept in ``AFHTTPResponse/trailers``), by `Content-Length`, or by the server closing the
///   connection (then ``finish()`` completes it);
/// - no body for a `HEAD` request and for `204` and `304` responses, whatever the headers say.
///
/// Strict where RFC 9112 is: the version digit is an ASCII digit, a CR only ends a line (a bare
/// CR anywhere else is an error), a NUL in a field value is an error (RFC 9110 5.5), an HTTP/1.0
/// response with `Transfer-Encoding` closes the connection (RFC 9112 6.1), and a chunk size is
/// hexadecimal digits alone, with no sign and no whitespace but the optional whitespace before a
/// `;` extension. Lenient where a user agent must be: an obs-fold (a field line continued on the
/// next, which starts with a space or tab) becomes one space (RFC 9112 5.2), and a number is
/// judged by its value, not its digits (leading zeros are fine).
///
/// Linear time: body bytes are copied once, from the input straight into the body, and the body
/// grows as they arrive (a `Content-Length` reserves nothing up front); only the head, chunk-size
/// lines and trailers are gathered line by line, each byte is looked at once, and a repeated
/// field is appended to in place.
///
/// A value type, used by one thread at a time: one parser per response.
public struct AFHTTPResponseParser: Sendable {
    /// Why the bytes are not an HTTP/1.1 response.
    public enum Error: Swift.Error, Equatable, Sendable {
        /// The status line is not `HTTP/1.x <three digits> <reason>`.
        case invalidStatusLine(String)
        /// A header or trailer line is not `name: value`.
        case invalidHeaderLine(String)
        /// `Content-Length` is not a decimal number (or lists different numbers).
        case invalidContentLength(String)
        /// The chunked framing is broken: a size that is not hexadecimal, or chunk data not
        /// followed by CRLF.
        case invalidChunk(String)
        /// The head (status line and headers, or the trailers) exceeds the limit in bytes.
        case headTooLarge(limit: Int)
        /// `101 Switching Protocols`, though the request asked for no upgrade.
        case unexpectedSwitchingProtocols
        /// The connection closed before the response was complete; says where it was.
        case connectionClosedEarly(String)
        /// More interim (`1xx`) responses than ``AFHTTPResponseParser/maximumInterimResponses``
        /// before the final one: a server that never answers.
        case tooManyInterimResponses(limit: Int)
    }

    /// How far a call to `parse(_:)` got.
    public enum Progress: Equatable, Sendable {
        /// The response is not complete yet: feed more bytes, or call ``finish()`` at the end of
        /// the stream.
        case needsMore
        /// The response is complete. `consumed` of the bytes given belong to it; any after them
        /// belong to whatever the server sent next.
        case complete(AFHTTPResponse, consumed: Int)
    }

    private enum State: Sendable, Equatable {
        case statusLine
        case headerLines
        case body(remaining: Int)
        case chunkSizeLine
        case chunkData(remaining: Int)
        case chunkDataEnd
        case trailerLines
        case bodyUntilClose
        case complete
    }

    /// A chunk-size line longer than this is refused (extensions included).
    static let maximumChunkLine = 4096
    /// Interim (`1xx`) responses accepted before the final one.
    public static let maximumInterimResponses = 32

    // MARK: Immutable
    private let isHeadRequest: Bool
    private let maximumHeadSize: Int

    // MARK: Parse state
    private var state = State.statusLine
    /// The line being gathered, without its line feed.
    private var line: [UInt8] = []
    /// Bytes of the current head (or of the trailers), checked against `maximumHeadSize`.
    private var headBytes = 0
    private var statusCode = 0
    private var minorVersion = 1
    private var headers: [String: String] = [:]
    private var trailers: [String: String] = [:]
    /// The name of the field line before, which an obs-fold line continues; nil before the first.
    private var lastFieldName: String?
    private var body: [UInt8] = []
    private var contentLength = 0
    /// Bytes copied while joining repeated fields: each value appended, plus the earlier value
    /// whenever the join moved it to new storage. Measured from where the storage is, not from
    /// what the join claims, so a join that copies the earlier value each time shows here as
    /// quadratic; an in-place join, whose storage grows geometrically, stays within a few times
    /// the joined size. For tests (a count, not a timing, so load cannot fail them).
    private(set) var joinBytesCopied = 0

    /// The status codes of the interim (`1xx`) responses skipped, in order.
    public private(set) var interimStatusCodes: [Int] = []
    /// Whether any byte has arrived. A kept-alive connection that the server closes before
    /// sending one byte was closed while idle, and the request may be retried on a new one.
    public private(set) var hasReceivedBytes = false
    /// Whether the connection may carry another request after this response: HTTP/1.1 without
    /// `Connection: close` (or HTTP/1.0 with `keep-alive`), and a body that did not end by close.
    /// Meaningful once complete.
    public private(set) var canReuseConnection = false

    /// A parser for the response to a request with `method`.
    ///
    /// - Parameters:
    ///   - method: the request's method; only `HEAD` matters (its response has no body).
    ///   - maximumHeadSize: the most bytes a head (status line and fields) or the trailers may
    ///     take before the response is refused with ``Error/headTooLarge(limit:)``.
    public init(method: String = "GET", maximumHeadSize: Int = 64 * 1024) {
        isHeadRequest = method.uppercased() == "HEAD"
        self.maximumHeadSize = maximumHeadSize
    }

    /// Feeds the next bytes of the stream.
    ///
    /// - Parameter bytes: the bytes, in order; any split is fine (one byte at a time too).
    /// - Returns: ``Progress/needsMore`` or ``Progress/complete(_:consumed:)``. Once complete,
    ///   the parser is done: use a new one for the next response.
    /// - Throws: ``Error`` when the bytes are not a response; the connection is then unusable.
    public mutating func parse(_ bytes: UnsafeBufferPointer<UInt8>) throws(Error) -> Progress {
        if !bytes.isEmpty { hasReceivedBytes = true }
        var index = 0
        while index < bytes.count, state != .complete {
            switch state {
            case .body(let remaining):
                let taken = takeBody(bytes, from: &index, upTo: remaining)
                state = taken == remaining ? .complete : .body(remaining: remaining - taken)
            case .chunkData(let remaining):
                let taken = takeBody(bytes, from: &index, upTo: remaining)
                state = taken == remaining ? .chunkDataEnd : .chunkData(remaining: remaining - taken)
            case .bodyUntilClose:
                _ = takeBody(bytes, from: &index, upTo: bytes.count - index)
            case .statusLine, .headerLines, .chunkSizeLine, .chunkDataEnd, .trailerLines:
                if let line = try takeLine(bytes, from: &index) { try handle(line) }
            case .complete:
                break
            }
        }
        return state == .complete ? .complete(takeResponse(), consumed: index) : .needsMore
    }

    /// Feeds the next bytes of the stream; see `parse(_:)`.
    ///
    /// - Parameter bytes: the bytes, in order.
    /// - Returns: whether the response is complete.
    /// - Throws: ``Error`` when the bytes are not a response.
    public mutating func parse(_ bytes: [UInt8]) throws(Error) -> Progress {
        var result = Result<Progress, Error>.success(.needsMore)
        bytes.withUnsafeBufferPointer { buffer in
            result = Result { () throws(Error) in try parse(buffer) }
        }
        return try result.get()
    }

    /// The stream ended (the server closed the connection): completes a response whose body runs
    /// to the close.
    ///
    /// - Returns: the response, if the close was its end.
    /// - Throws: ``Error/connectionClosedEarly(_:)`` if the response was not complete.
    public mutating func finish() throws(Error) -> AFHTTPResponse {
        switch state {
        case .bodyUntilClose:
            state = .complete
            return takeResponse()
        case .statusLine where !hasReceivedBytes:
            throw .connectionClosedEarly("before any byte of the response")
        case .statusLine, .headerLines:
            throw .connectionClosedEarly("in the response head")
        case .body(let remaining):
            throw .connectionClosedEarly("with \(remaining) of \(contentLength) body bytes (Content-Length) missing")
        case .chunkSizeLine, .chunkData, .chunkDataEnd, .trailerLines:
            throw .connectionClosedEarly("in the chunked body, before its last chunk and trailers")
        case .complete:
            preconditionFailure("AFHTTPResponseParser.finish() after the response was complete")
        }
    }

    // MARK: - Pieces

    /// Copies up to `limit` body bytes from `bytes` straight into the body.
    private mutating func takeBody(_ bytes: UnsafeBufferPointer<UInt8>, from index: inout Int, upTo limit: Int) -> Int {
        let count = min(limit, bytes.count - index)
        body.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[index..<index + count]))
        index += count
        return count
    }

    /// Gathers bytes up to a line feed. Returns the line without its CR LF, or nil once the
    /// input ran out first (the part seen is kept for the next call).
    private mutating func takeLine(_ bytes: UnsafeBufferPointer<UInt8>, from index: inout Int) throws(Error) -> [UInt8]? {
        let newline = bytes[index...].firstIndex(of: UInt8(ascii: "\n"))
        let end = newline ?? bytes.count
        let length = end - index + (newline == nil ? 0 : 1)
        switch state {
        case .chunkSizeLine, .chunkDataEnd:
            if line.count + length > Self.maximumChunkLine {
                throw .invalidChunk("a chunk-size line longer than \(Self.maximumChunkLine) bytes")
            }
        default:
            headBytes += length
            if headBytes > maximumHeadSize { throw .headTooLarge(limit: maximumHeadSize) }
        }
        line.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[index..<end]))
        index = end + (newline == nil ? 0 : 1)
        guard newline != nil else { return nil }
        var complete = line
        line.removeAll(keepingCapacity: true)
        if complete.last == UInt8(ascii: "\r") { complete.removeLast() }
        return complete
    }

    private mutating func handle(_ line: [UInt8]) throws(Error) {
        // A CR ends a line only before its LF (RFC 9112 2.2: a bare CR is an error).
        if line.contains(UInt8(ascii: "\r")) { throw bareCarriageReturn(in: line) }
        switch state {
        case .statusLine:
            try parseStatusLine(line)
            state = .headerLines
        case .headerLines:
            if line.isEmpty { try endOfHead() } else { try addField(line, toTrailers: false) }
        case .chunkSizeLine:
            let size = try Self.chunkSize(line)
            if size == 0 {
                headBytes = 0
                lastFieldName = nil
                state = .trailerLines
            } else {
                state = .chunkData(remaining: size)
            }
        case .chunkDataEnd:
            guard line.isEmpty else { throw .invalidChunk("chunk data not followed by CRLF") }
            state = .chunkSizeLine
        case .trailerLines:
            if line.isEmpty { state = .complete } else { try addField(line, toTrailers: true) }
        case .body, .chunkData, .bodyUntilClose, .complete:
            preconditionFailure("no lines in state \(state)")
        }
    }

    private func bareCarriageReturn(in line: [UInt8]) -> Error {
        let text = String(decoding: line, as: UTF8.self)
        switch state {
        case .statusLine: return .invalidStatusLine(text)
        case .headerLines, .trailerLines: return .invalidHeaderLine(text)
        default: return .invalidChunk("a bare CR in \"\(text)\"")
        }
    }

    /// `HTTP/1.1 200 OK`: the version and a three-digit code, in ASCII digits; the reason phrase
    /// may be empty.
    private mutating func parseStatusLine(_ line: [UInt8]) throws(Error) {
        let digit = UInt8(ascii: "0")...UInt8(ascii: "9")
        let version = Array("HTTP/1.".utf8)
        guard line.count >= 12, line.starts(with: version), digit.contains(line[7]), line[8] == UInt8(ascii: " "),
              line[9..<12].allSatisfy(digit.contains), line.count == 12 || line[12] == UInt8(ascii: " "),
              line[9] != UInt8(ascii: "0")
        else { throw .invalidStatusLine(String(decoding: line, as: UTF8.self)) }
        minorVersion = Int(line[7] - UInt8(ascii: "0"))
        statusCode = line[9..<12].reduce(0) { $0 * 10 + Int($1 - UInt8(ascii: "0")) }
    }

    /// The blank line after the fields: an interim response starts over, a final one chooses
    /// how its body is framed.
    private mutating func endOfHead() throws(Error) {
        if (100..<200).contains(statusCode) {
            if statusCode == 101 { throw .unexpectedSwitchingProtocols }
            if interimStatusCodes.count == Self.maximumInterimResponses {
                throw .tooManyInterimResponses(limit: Self.maximumInterimResponses)
            }
            interimStatusCodes.append(statusCode)
            headers = [:]
            lastFieldName = nil
            headBytes = 0
            state = .statusLine
            return
        }
        let connection = Self.tokens(headers["connection"])
        var persistent = minorVersion >= 1 ? !connection.contains("close") : connection.contains("keep-alive")
        // HTTP/1.0 has no Transfer-Encoding: its framing is suspect, and the connection must close
        // after it (RFC 9112 6.1), keep-alive or not, and whether or not a body follows (HEAD, 204, 304).
        if minorVersion == 0, headers["transfer-encoding"] != nil { persistent = false }
        if isHeadRequest || statusCode == 204 || statusCode == 304 {
            state = .complete
        } else if let codings = headers["transfer-encoding"].map(Self.tokens) {
            // Chunked last: chunked framing. Anything else: the body runs to the close (RFC 9112
            // 6.3). With a Content-Length too, the framing is suspect: do not reuse the connection.
            if codings.last == "chunked" { state = .chunkSizeLine } else { state = .bodyUntilClose }
            if codings.last != "chunked" || headers["content-length"] != nil { persistent = false }
        } else if let value = headers["content-length"] {
            // Nothing reserved: a 55-byte head could otherwise claim any amount of memory.
            contentLength = try Self.contentLength(value)
            state = contentLength == 0 ? .complete : .body(remaining: contentLength)
        } else {
            state = .bodyUntilClose
        }
        canReuseConnection = persistent && state != .bodyUntilClose
    }

    private mutating func takeResponse() -> AFHTTPResponse {
        let response = AFHTTPResponse(statusCode: statusCode, headers: headers, body: body, trailers: trailers)
        body = []
        return response
    }

    // MARK: - Fields and numbers

    /// `name: value`, with optional whitespace around the value; the name is a token, lowercased.
    /// A line starting with a space or tab continues the field before (obs-fold). A NUL in the
    /// value is an error: RFC 9110 5.5 has a recipient reject it or replace it, and rejecting
    /// keeps a NUL-terminated consumer from reading a shorter value than this parser did.
    private mutating func addField(_ line: [UInt8], toTrailers: Bool) throws(Error) {
        // Moved out and back, not copied: the joins stay in place.
        var fields: [String: String] = [:]
        if toTrailers { swap(&fields, &trailers) } else { swap(&fields, &headers) }
        defer { if toTrailers { swap(&fields, &trailers) } else { swap(&fields, &headers) } }
        if line.contains(0) { throw .invalidHeaderLine(String(decoding: line, as: UTF8.self)) }
        if line.first == UInt8(ascii: " ") || line.first == UInt8(ascii: "\t") {
            // Before any field, a folded line is whitespace after the start line: rejected
            // (RFC 9112 2.2 allows rejecting it).
            guard let name = lastFieldName else { throw .invalidHeaderLine(String(decoding: line, as: UTF8.self)) }
            let more = String(decoding: line, as: UTF8.self).trimmingOptionalWhitespace()
            if !more.isEmpty { Self.append(more, after: fields[name]?.isEmpty == false ? " " : "", to: &fields, name, copied: &joinBytesCopied) }
            return
        }
        guard let colon = line.firstIndex(of: UInt8(ascii: ":")), colon > 0,
              line[..<colon].allSatisfy(Self.isTokenByte)
        else { throw .invalidHeaderLine(String(decoding: line, as: UTF8.self)) }
        let name = String(decoding: line[..<colon], as: UTF8.self).lowercased()
        let value = String(decoding: line[(colon + 1)...], as: UTF8.self).trimmingOptionalWhitespace()
        lastFieldName = name
        if fields[name] == nil { fields[name] = value } else { Self.append(value, after: ", ", to: &fields, name, copied: &joinBytesCopied) }
    }

    /// Appends `separator` and `value` to the field `name`, in place (not `earlier + ", " +
    /// value`, a copy per repeat: quadratic), counting the bytes copied.
    private static func append(_ value: String, after separator: String, to fields: inout [String: String], _ name: String,
                               copied: inout Int) {
        let earlierCount = fields[name]?.utf8.count ?? 0
        let before = storageAddress(fields[name])
        fields[name, default: ""] += separator + value
        copied += value.utf8.count + separator.utf8.count + (storageAddress(fields[name]) == before ? 0 : earlierCount)
    }

    /// Where a string's bytes are (nil for a small string, kept inline): compared before and
    /// after a join to see whether it moved the earlier value. Holds no reference past the call.
    private static func storageAddress(_ string: String?) -> UInt? {
        string?.utf8.withContiguousStorageIfAvailable { UInt(bitPattern: $0.baseAddress) }
    }

    /// ASCII hexadecimal digits, then nothing or `;extensions` (ignored), with only the optional
    /// whitespace RFC 9112 7.1.1 allows before the `;`: no sign, no whitespace before the size
    /// or after it at the end of the line. Leading zeros are any number (a last chunk of twenty
    /// zeros is valid); the value has at most 15 significant digits (under 2^60).
    private static func chunkSize(_ line: [UInt8]) throws(Error) -> Int {
        let digits = line.prefix(while: isHexDigit)
        var rest = line[digits.count...]
        let blank = rest.prefix { $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") }
        rest = rest.dropFirst(blank.count)
        guard !digits.isEmpty, rest.isEmpty ? blank.isEmpty : rest.first == UInt8(ascii: ";")
        else { throw .invalidChunk("chunk size \"\(String(decoding: line, as: UTF8.self))\" is not hexadecimal") }
        let significant = digits.drop { $0 == UInt8(ascii: "0") }
        guard significant.count <= 15 else { throw .invalidChunk("chunk size \"\(String(decoding: line, as: UTF8.self))\" is too large") }
        return significant.reduce(0) { $0 << 4 | hexValue($1) }
    }

    private static func isHexDigit(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "f"), UInt8(ascii: "A")...UInt8(ascii: "F"): true
        default: false
        }
    }

    private static func hexValue(_ byte: UInt8) -> Int {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): Int(byte - UInt8(ascii: "0"))
        case UInt8(ascii: "a")...UInt8(ascii: "f"): Int(byte - UInt8(ascii: "a")) + 10
        default: Int(byte - UInt8(ascii: "A")) + 10
        }
    }

    /// Decimal digits, any number of them while the value fits in an `Int` (19 digits, or more
    /// with leading zeros); a list of equal values (`5, 5`) is one value (RFC 9110 8.6).
    private static func contentLength(_ value: String) throws(Error) -> Int {
        let values = value.split(separator: ",").map { $0.trimmingOptionalWhitespace() }
        guard let first = values.first, values.allSatisfy({ $0 == first }),
              !first.isEmpty, first.allSatisfy({ $0.isASCII && $0.isNumber }), let length = Int(first)
        else { throw .invalidContentLength(value) }
        return length
    }

    /// A comma-separated list, lowercased and trimmed (`Connection`, `Transfer-Encoding`).
    private static func tokens(_ value: String?) -> [String] {
        (value ?? "").split(separator: ",").map { $0.trimmingOptionalWhitespace().lowercased() }
    }

    private static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        default:
            return Array("!#$%&'*+-.^_`|~".utf8).contains(byte)
        }
    }
}

extension StringProtocol {
    /// Without leading and trailing spaces and tabs (HTTP's optional whitespace), byte by byte:
    /// by characters, a space followed by a combining mark is one character that is not a space,
    /// and would stay.
    fileprivate func trimmingOptionalWhitespace() -> String {
        let isText: (UInt8) -> Bool = { $0 != UInt8(ascii: " ") && $0 != UInt8(ascii: "\t") }
        let bytes = Array(utf8)
        guard let first = bytes.firstIndex(where: isText), let last = bytes.lastIndex(where: isText) else { return "" }
        return String(decoding: bytes[first...last], as: UTF8.self)
    }
}
