@testable import AFNetworkingExample
import Foundation
import Testing

/// The parser as a plain value: every response is fed whole, byte by byte, and in odd splits,
/// and must come out the same each way.
@Suite struct AFHTTPResponseParserTests {
    // MARK: - Helpers

    /// The ways a stream is cut into pieces: whole, one byte at a time, pieces of 1, 2, 3, 5, 8...
    /// bytes, and every cut into two.
    static func splits(of count: Int) -> [[Int]] {
        var result: [[Int]] = [[count], Array(repeating: 1, count: count)]
        var fibonacci: [Int] = []
        var (a, b, total) = (1, 2, 0)
        while total < count {
            let piece = min(a, count - total)
            fibonacci.append(piece)
            total += piece
            (a, b) = (b, a + b)
        }
        result.append(fibonacci)
        for cut in stride(from: 1, to: count, by: max(1, count / 300)) { result.append([cut, count - cut]) }
        return result
    }

    /// Feeds `bytes` cut as `sizes`; returns the response and how many bytes it took, or nil if
    /// it still needs more at the end.
    static func feed(_ bytes: [UInt8], sizes: [Int], parser: inout AFHTTPResponseParser) throws -> (AFHTTPResponse, consumed: Int)? {
        var offset = 0
        for size in sizes {
            let progress = try parser.parse(Array(bytes[offset..<offset + size]))
            if case .complete(let response, let consumed) = progress { return (response, offset + consumed) }
            offset += size
        }
        return nil
    }

    /// Parses `text` in every split; expects the same complete response each time and returns it.
    static func parseEveryWay(_ text: String, method: String = "GET", sourceLocation: SourceLocation = #_sourceLocation)
        throws -> (response: AFHTTPResponse, consumed: Int, parser: AFHTTPResponseParser) {
        let bytes = Array(text.utf8)
        var first: (AFHTTPResponse, Int, AFHTTPResponseParser)?
        for sizes in splits(of: bytes.count) {
            var parser = AFHTTPResponseParser(method: method)
            let outcome = try #require(try feed(bytes, sizes: sizes, parser: &parser), "incomplete with pieces \(sizes)", sourceLocation: sourceLocation)
            if let first {
                #expect(outcome.0 == first.0 && outcome.consumed == first.1, "pieces \(sizes)", sourceLocation: sourceLocation)
            } else {
                first = (outcome.0, outcome.consumed, parser)
            }
        }
        return try #require(first, sourceLocation: sourceLocation)
    }

    /// Parses `text` in every split; expects `error` each time (thrown by `parse` or, at the end
    /// of the stream, by `finish`).
    static func expectErrorEveryWay(_ text: String, _ error: AFHTTPResponseParser.Error, maximumHeadSize: Int = 64 * 1024,
                                    sourceLocation: SourceLocation = #_sourceLocation) {
        let bytes = Array(text.utf8)
        for sizes in splits(of: bytes.count) {
            var parser = AFHTTPResponseParser(maximumHeadSize: maximumHeadSize)
            #expect(throws: error, "pieces \(sizes)", sourceLocation: sourceLocation) {
                if try feed(bytes, sizes: sizes, parser: &parser) == nil { _ = try parser.finish() }
            }
        }
    }

    // MARK: - Framing

    @Test("Content-Length: the body is that many bytes; repeated fields are joined")
    func contentLength() throws {
        let text = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX-A: 1\r\nx-a:2 \r\nContent-Type:\ttext/plain\r\n\r\nhello"
        let (response, consumed, parser) = try Self.parseEveryWay(text)
        #expect(response.statusCode == 200)
        #expect(response.bodyText == "hello")
        #expect(response.headers["x-a"] == "1, 2")
        #expect(response.headers["content-type"] == "text/plain")
        #expect(consumed == text.utf8.count)
        #expect(parser.canReuseConnection)
    }

    @Test("chunked: extensions ignored, the framing removed, trailers kept")
    func chunkedWithTrailers() throws {
        let (response, _, parser) = try Self.parseEveryWay(
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: X-Checksum\r\n\r\n"
                + "5;name=value\r\nhello\r\n1; quoted=\"a;b\"\r\n,\r\n006\r\n world\r\nA\r\n0123456789\r\n"
                + "0\r\nX-Checksum: abc123\r\nX-Other: 1\r\n\r\n")
        #expect(response.bodyText == "hello, world0123456789")
        #expect(response.trailers == ["x-checksum": "abc123", "x-other": "1"])
        #expect(response.headers["x-checksum"] == nil)
        #expect(parser.canReuseConnection)
    }

    @Test("chunked without trailers, and a chunked body of one empty last chunk")
    func chunkedPlain() throws {
        #expect(try Self.parseEveryWay("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n").response.bodyText == "abc")
        #expect(try Self.parseEveryWay("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n").response.body.isEmpty)
    }

    @Test("interim 100 and 103 responses are skipped; the final response is returned")
    func interimResponses() throws {
        let (response, _, parser) = try Self.parseEveryWay(
            "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n"
                + "HTTP/1.1 201 Created\r\nContent-Length: 5\r\n\r\nfinal")
        #expect(response.statusCode == 201)
        #expect(response.bodyText == "final")
        #expect(response.headers["link"] == nil, "interim fields are not the response's")
        #expect(parser.interimStatusCodes == [100, 103])
    }

    @Test("HEAD, 204 and 304 have no body, whatever Content-Length says; the bytes after are not theirs")
    func noBody() throws {
        let next = "HTTP/1.1 200 OK\r\n"
        let headText = "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n"
        let head = try Self.parseEveryWay(headText + next, method: "HEAD")
        #expect(head.response.body.isEmpty && head.response.headers["content-length"] == "10")
        #expect(head.consumed == headText.utf8.count)
        for status in ["204 No Content", "304 Not Modified"] {
            let text = "HTTP/1.1 \(status)\r\nContent-Length: 10\r\n\r\n"
            let parsed = try Self.parseEveryWay(text + next)
            #expect(parsed.response.body.isEmpty)
            #expect(parsed.consumed == text.utf8.count)
            #expect(parsed.parser.canReuseConnection)
        }
    }

    @Test("neither length nor chunked: the body runs to the close, and the connection is not reused")
    func untilClose() throws {
        let bytes = Array("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nuntil the end".utf8)
        for sizes in Self.splits(of: bytes.count) {
            var parser = AFHTTPResponseParser()
            #expect(try Self.feed(bytes, sizes: sizes, parser: &parser) == nil)
            let response = try parser.finish()
            #expect(response.bodyText == "until the end")
            #expect(!parser.canReuseConnection)
        }
    }

    @Test("a response followed by more bytes reports how many were its own")
    func consumedStopsAtTheEnd() throws {
        let first = "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc"
        let (response, consumed, _) = try Self.parseEveryWay(first + "HTTP/1.1 404 Not Found\r\n")
        #expect(response.bodyText == "abc")
        #expect(consumed == first.utf8.count)
    }

    @Test("keep-alive: HTTP/1.1 unless Connection: close; HTTP/1.0 only with keep-alive; chunked with Content-Length is not reused")
    func connectionReuse() throws {
        #expect(try !Self.parseEveryWay("HTTP/1.1 200 OK\r\nConnection: Close\r\nContent-Length: 0\r\n\r\n").parser.canReuseConnection)
        #expect(try !Self.parseEveryWay("HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n").parser.canReuseConnection)
        #expect(try Self.parseEveryWay("HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n").parser.canReuseConnection)
        let both = try Self.parseEveryWay("HTTP/1.1 200 OK\r\nContent-Length: 99\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n")
        #expect(both.response.bodyText == "ok", "Transfer-Encoding wins over Content-Length")
        #expect(!both.parser.canReuseConnection)
    }

    @Test("bare LF line endings are accepted, and an empty reason phrase")
    func bareLineFeeds() throws {
        let (response, _, _) = try Self.parseEveryWay("HTTP/1.1 200 \nContent-Length: 2\n\nok")
        #expect(response.statusCode == 200 && response.bodyText == "ok")
    }

    @Test("a large body fed in socket-sized pieces comes out whole")
    func largeBody() throws {
        let size = 4 << 20
        let body = (0..<size).map { UInt8(truncatingIfNeeded: $0 % 251) }
        let bytes = Array("HTTP/1.1 200 OK\r\nContent-Length: \(size)\r\n\r\n".utf8) + body
        var parser = AFHTTPResponseParser()
        let outcome = try #require(try Self.feed(bytes, sizes: stride(from: 0, to: bytes.count, by: 65536).map { min(65536, bytes.count - $0) }, parser: &parser))
        #expect(outcome.0.body == body)
    }

    // MARK: - Malformed responses

    @Test("malformed status lines, fields and lengths are errors that say what is wrong")
    func malformedHead() {
        Self.expectErrorEveryWay("hello there\r\n\r\n", .invalidStatusLine("hello there"))
        Self.expectErrorEveryWay("HTTP/1.1 abc OK\r\n\r\n", .invalidStatusLine("HTTP/1.1 abc OK"))
        Self.expectErrorEveryWay("HTTP/2 200 OK\r\n\r\n", .invalidStatusLine("HTTP/2 200 OK"))
        Self.expectErrorEveryWay("HTTP/1.1 200 OK\r\nNo colon here\r\n\r\n", .invalidHeaderLine("No colon here"))
        Self.expectErrorEveryWay("HTTP/1.1 200 OK\r\nName : value\r\n\r\n", .invalidHeaderLine("Name : value"))
        Self.expectErrorEveryWay("HTTP/1.1 200 OK\r\nContent-Length: 12x\r\n\r\n", .invalidContentLength("12x"))
        Self.expectErrorEveryWay("HTTP/1.1 200 OK\r\nContent-Length: 5, 6\r\n\r\n", .invalidContentLength("5, 6"))
        Self.expectErrorEveryWay("HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", .invalidContentLength("-1"))
        Self.expectErrorEveryWay("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n", .unexpectedSwitchingProtocols)
        Self.expectErrorEveryWay("HTTP/1.1 200 OK\r\nX-Big: " + String(repeating: "a", count: 200) + "\r\n\r\n",
                                 .headTooLarge(limit: 100), maximumHeadSize: 100)
    }

    @Test("broken chunked framing is an error")
    func malformedChunks() {
        let head = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
        Self.expectErrorEveryWay(head + "zz\r\nhello\r\n", .invalidChunk("chunk size \"zz\" is not hexadecimal"))
        Self.expectErrorEveryWay(head + "-5\r\nhello\r\n", .invalidChunk("chunk size \"-5\" is not hexadecimal"))
        Self.expectErrorEveryWay(head + "\r\n", .invalidChunk("chunk size \"\" is not hexadecimal"))
        Self.expectErrorEveryWay(head + "5\r\nhello!\r\n0\r\n\r\n", .invalidChunk("chunk data not followed by CRLF"))
        Self.expectErrorEveryWay(head + String(repeating: "1", count: 5000), .invalidChunk("a chunk-size line longer than 4096 bytes"))
    }

    @Test("a stream that ends before the response does is an error, wherever it stops")
    func truncated() {
        Self.expectErrorEveryWay("", .connectionClosedEarly("before any byte of the response"))
        Self.expectErrorEveryWay("HTTP/1.1 200 OK\r\nContent-Le", .connectionClosedEarly("in the response head"))
        Self.expectErrorEveryWay("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc",
                                 .connectionClosedEarly("with 7 of 10 body bytes (Content-Length) missing"))
        let chunkedEnd = AFHTTPResponseParser.Error.connectionClosedEarly("in the chunked body, before its last chunk and trailers")
        Self.expectErrorEveryWay("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel", chunkedEnd)
        Self.expectErrorEveryWay("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nX-T: 1\r\n", chunkedEnd)
    }

    // MARK: - RFC 9112, strictly

    static let chunkedHead = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"

    @Test("a chunk size of -0 (or +0) is not hexadecimal: it does not end the body")
    func signedZeroChunk() {
        Self.expectErrorEveryWay(Self.chunkedHead + "-0\r\n\r\n", .invalidChunk("chunk size \"-0\" is not hexadecimal"))
        Self.expectErrorEveryWay(Self.chunkedHead + "+0\r\n\r\n", .invalidChunk("chunk size \"+0\" is not hexadecimal"))
    }

    @Test("no space or tab around a chunk size; extensions after ';' are ignored, with the optional whitespace before it")
    func chunkSizeWhitespace() throws {
        for line in [" 5", "5 ", "5\t", "\t5", "5 5"] {
            Self.expectErrorEveryWay(Self.chunkedHead + line + "\r\nhello\r\n0\r\n\r\n", .invalidChunk("chunk size \"\(line)\" is not hexadecimal"))
        }
        let plain = try Self.parseEveryWay(Self.chunkedHead + "5;name=value\r\nhello\r\n0 ; last\r\n\r\n")
        #expect(plain.response.body == Array("hello".utf8))
    }

    @Test("the version and status digits are ASCII digits: HTTP/1.五 is not HTTP/1.5")
    func asciiDigits() {
        Self.expectErrorEveryWay("HTTP/1.五 200 OK\r\n\r\n", .invalidStatusLine("HTTP/1.五 200 OK"))
        Self.expectErrorEveryWay("HTTP/1.1 ٢٠٠ OK\r\n\r\n", .invalidStatusLine("HTTP/1.1 ٢٠٠ OK"))
    }

    @Test("a bare CR (not before LF) in the status line, a field or a chunk-size line is an error")
    func bareCarriageReturn() {
        Self.expectErrorEveryWay("HTTP/1.1 200 O\rK\r\n\r\n", .invalidStatusLine("HTTP/1.1 200 O\rK"))
        Self.expectErrorEveryWay("HTTP/1.1 200 OK\r\nA: b\rc\r\n\r\n", .invalidHeaderLine("A: b\rc"))
        Self.expectErrorEveryWay(Self.chunkedHead + "5;a\rb\r\nhello\r\n0\r\n\r\n", .invalidChunk("a bare CR in \"5;a\rb\""))
    }

    @Test("interim 1xx responses are bounded: 32 are skipped, the 33rd is an error")
    func interimBound() throws {
        let interim = "HTTP/1.1 100 Continue\r\n\r\n"
        let final = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"
        let limit = AFHTTPResponseParser.maximumInterimResponses
        let parsed = try Self.parseEveryWay(String(repeating: interim, count: limit) + final)
        #expect(parsed.parser.interimStatusCodes.count == limit)
        Self.expectErrorEveryWay(String(repeating: interim, count: limit + 1) + final, .tooManyInterimResponses(limit: limit))
    }

    @Test("a huge Content-Length in a small head reserves no memory up front")
    func noReservationFromContentLength() throws {
        // The process's mapped size: a body buffer reserved from Content-Length (64 MiB, say) is a
        // mapping of its own, so it shows there. The smallest rise of three tries, in case another
        // test maps memory meanwhile.
        var rises: [Int] = []
        for _ in 0..<3 {
            let before = try Self.mappedBytes()
            var parser = AFHTTPResponseParser()
            #expect(try parser.parse(Array("HTTP/1.1 200 OK\r\nContent-Length: 999999999999\r\n\r\nabc".utf8)) == .needsMore)
            rises.append(try Self.mappedBytes() - before)
            withExtendedLifetime(parser) {}
        }
        #expect(rises.min()! < 16 << 20, "mapped \(rises) bytes more for a 3-byte body")
    }

    /// VmSize of /proc/self/status, in bytes.
    static func mappedBytes() throws -> Int {
        let status = try String(contentsOfFile: "/proc/self/status", encoding: .utf8)
        let line = try #require(status.split(separator: "\n").first { $0.hasPrefix("VmSize:") })
        // "VmSize:\t  1234 kB", or with no space at all when the number fills the field (a
        // sanitizer's shadow mappings): split on spaces and tabs.
        let fields = line.split { $0 == " " || $0 == "\t" }
        return try #require(fields.count > 1 ? Int(fields[1]) : nil) * 1024
    }

    @Test("repeated fields are joined in linear time: the bytes the joins copy stay within a few times the joined value")
    func repeatedFieldsLinear() throws {
        // Counts, not timings: a load on the machine cannot fail it. A join that copies the
        // earlier value each time copies about repeats² × 81 bytes (81 MB for 1,000 repeats);
        // an in-place join, whose storage grows geometrically, under 3 × the value.
        let value = String(repeating: "b", count: 160)
        for repeats in [1_000, 4_000] {
            for (field, framing) in [("X-A", "Content-Length: 0\r\n\r\n"), ("X-T", "")] {
                let lines = String(repeating: "\(field): \(value)\r\n", count: repeats)
                // The same field repeated in the head, or in the trailers of a chunked body.
                let text = framing.isEmpty
                    ? "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n" + lines + "\r\n"
                    : "HTTP/1.1 200 OK\r\n" + lines + framing
                var parser = AFHTTPResponseParser(maximumHeadSize: 8 << 20)
                guard case .complete(let response, _) = try parser.parse(Array(text.utf8)) else { throw ParserTestError.incomplete }
                let joined = try #require((response.headers["x-a"] ?? response.trailers["x-t"])?.utf8.count)
                #expect(joined == repeats * 162 - 2)
                #expect(parser.joinBytesCopied <= 4 * joined, "\(repeats) \(field): \(parser.joinBytesCopied) bytes copied for \(joined)")
            }
        }
    }

    enum ParserTestError: Error { case incomplete }
}

/// Where RFC 9110 and RFC 9112 ask a recipient to be stricter, and where they ask a user agent to
/// be more lenient, than a naive parser.
extension AFHTTPResponseParserTests {
    @Test("a NUL in a header or trailer value is an error (RFC 9110 5.5: reject or replace)")
    func nulInFieldValue() {
        Self.expectErrorEveryWay("HTTP/1.1 200 OK\r\nX-A: a\0b\r\nContent-Length: 0\r\n\r\n", .invalidHeaderLine("X-A: a\0b"))
        Self.expectErrorEveryWay("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nX-T: \0\r\n\r\n", .invalidHeaderLine("X-T: \0"))
    }

    @Test("HTTP/1.0 with Transfer-Encoding is never reused, keep-alive or not (RFC 9112 6.1)")
    func http10ChunkedNotReused() throws {
        let outcome = try Self.parseEveryWay(
            "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n")
        #expect(outcome.response.bodyText == "ok")
        #expect(!outcome.parser.canReuseConnection)
        // Whether or not a body follows: the response to HEAD, and a 204 or 304 (found by the fuzzer).
        let head = "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nTransfer-Encoding: chunked\r\n\r\n"
        #expect(try !Self.parseEveryWay(head, method: "HEAD").parser.canReuseConnection)
        let noContent = "HTTP/1.0 204 No Content\r\nConnection: keep-alive\r\nTransfer-Encoding: chunked\r\n\r\n"
        #expect(try !Self.parseEveryWay(noContent).parser.canReuseConnection)
    }

    @Test("obs-fold in a field is replaced by a space (RFC 9112 5.2); before the first field it is an error")
    func obsFold() throws {
        let (response, _, _) = try Self.parseEveryWay(
            "HTTP/1.1 200 OK\r\nX-Long: one\r\n  two\r\n\tthree\r\nContent-Length: 2\r\n\r\nok")
        #expect(response.headers["x-long"] == "one two three")
        #expect(response.bodyText == "ok")
        let chunked = try Self.parseEveryWay("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nX-T: a\r\n b\r\n\r\n")
        #expect(chunked.response.trailers["x-t"] == "a b")
        Self.expectErrorEveryWay("HTTP/1.1 200 OK\r\n folded: no\r\n\r\n", .invalidHeaderLine(" folded: no"))
    }

    @Test("optional whitespace is trimmed by bytes: a space before a combining mark goes (found by the fuzzer)")
    func whitespaceBeforeCombiningMark() throws {
        let (response, _, _) = try Self.parseEveryWay("HTTP/1.1 200 OK\r\nX-A: \u{5B4}b \u{301}\r\nContent-Length: 0\r\n\r\n")
        #expect(response.headers["x-a"] == "\u{5B4}b \u{301}")
        #expect(response.headers["x-a"]?.utf8.first == 0xD6)
    }

    @Test("a last chunk of 20 zeros ends the body; a Content-Length of 19 digits is a length")
    func longValidNumbers() throws {
        let zeros = try Self.parseEveryWay(
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0002\r\nok\r\n" + String(repeating: "0", count: 20) + "\r\n\r\n")
        #expect(zeros.response.bodyText == "ok")
        let padded = try Self.parseEveryWay("HTTP/1.1 200 OK\r\nContent-Length: 0000000000000000002\r\n\r\nok")
        #expect(padded.response.bodyText == "ok")
        var parser = AFHTTPResponseParser()
        #expect(try parser.parse(Array("HTTP/1.1 200 OK\r\nContent-Length: 1000000000000000000\r\n\r\nabc".utf8)) == .needsMore)
        Self.expectErrorEveryWay("HTTP/1.1 200 OK\r\nContent-Length: 9223372036854775808\r\n\r\n",
                                 .invalidContentLength("9223372036854775808"))
        let head = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
        Self.expectErrorEveryWay(head + "1" + String(repeating: "0", count: 16) + "\r\n",
                                 .invalidChunk("chunk size \"1" + String(repeating: "0", count: 16) + "\" is too large"))
    }
}
