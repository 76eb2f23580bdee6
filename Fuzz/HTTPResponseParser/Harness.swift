// libFuzzer target for the AFNetworking example's HTTP response parser, compiled with its
// sources by scripts/fuzz.sh (one module, no package). Invariants checked on every input:
// - one read, reads in pieces whose sizes the input chooses, and one byte at a time give the same
//   outcome (the same response and bytes consumed, or the same error), the stream's end included;
// - a complete response framed by Content-Length has a body of exactly that many bytes, and
//   never consumes more bytes than it was given;
// - no header or trailer value holds a NUL, CR or LF, nor starts with a space or tab (a NUL is
//   refused, an obs-fold is one space: RFC 9110 5.5, RFC 9112 5.2);
// - an HTTP/1.0 response with Transfer-Encoding never leaves the connection reusable (RFC 9112 6.1).
// A broken invariant traps, which libFuzzer reports as a crash with the input saved.

enum Outcome: Equatable {
    case complete(AFHTTPResponse, consumed: Int)
    case closed(AFHTTPResponse)
    case failed(AFHTTPResponseParser.Error)
}

/// Feeds `bytes` in pieces of `sizes` (cycled), then ends the stream if it still needs more.
func outcome(of bytes: [UInt8], method: String, sizes: [Int]) -> Outcome {
    var parser = AFHTTPResponseParser(method: method, maximumHeadSize: 2048)
    var offset = 0, turn = 0
    do {
        while offset < bytes.count {
            let size = min(max(sizes[turn % sizes.count], 1), bytes.count - offset)
            turn += 1
            if case .complete(let response, let consumed) = try parser.parse(Array(bytes[offset..<offset + size])) {
                if bytes.starts(with: Array("HTTP/1.0 ".utf8)), parser.interimStatusCodes.isEmpty, response.headers["transfer-encoding"] != nil {
                    check(!parser.canReuseConnection, "an HTTP/1.0 response with Transfer-Encoding left the connection reusable")
                }
                return .complete(response, consumed: offset + consumed)
            }
            offset += size
        }
        return .closed(try parser.finish())
    } catch {
        return .failed(error)
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ count: Int) -> CInt {
    guard count > 0 else { return 0 }
    // The first byte chooses the method and the piece sizes; the rest is the stream.
    let control = data[0]
    let bytes = Array(UnsafeBufferPointer(start: data + 1, count: count - 1))
    let method = control & 0x80 != 0 ? "HEAD" : "GET"
    let whole = outcome(of: bytes, method: method, sizes: [max(bytes.count, 1)])
    let pieces = outcome(of: bytes, method: method, sizes: [Int(control & 0x0F) + 1, Int(control >> 4 & 0x07) + 2, 3])
    let single = outcome(of: bytes, method: method, sizes: [1])
    check(whole == pieces, "pieces disagree with one read: \(pieces) vs \(whole)")
    check(whole == single, "byte by byte disagrees with one read: \(single) vs \(whole)")
    if case .complete(let response, _) = whole { checkFieldValues(response) }
    if case .closed(let response) = whole { checkFieldValues(response) }
    if case .complete(let response, let consumed) = whole {
        check(consumed <= bytes.count, "consumed \(consumed) of \(bytes.count) bytes")
        if method == "GET", response.headers["transfer-encoding"] == nil, let length = response.headers["content-length"],
           ![204, 304].contains(response.statusCode) {
            let declared = Int(length.split(separator: ",")[0].filter { $0 != " " && $0 != "\t" })
            check(declared == response.body.count, "Content-Length \(length), body \(response.body.count) bytes")
        }
    }
    return 0
}

/// Field values hold no NUL, CR or LF, and start with no whitespace (an obs-fold's is trimmed;
/// a repeated field whose last value is empty may end with the join's ", ").
func checkFieldValues(_ response: AFHTTPResponse) {
    for (name, value) in Array(response.headers) + Array(response.trailers) {
        check(!value.utf8.contains { $0 == 0 || $0 == 13 || $0 == 10 }, "field \(name) holds a NUL, CR or LF")
        check(value.utf8.first != 32 && value.utf8.first != 9, "field \(name) starts with whitespace: \(value)")
    }
}

/// A broken invariant: a crash with its message (`precondition` drops messages under -O).
func check(_ condition: Bool, _ message: @autoclosure () -> String) {
    if !condition { fatalError("invariant broken: \(message())") }
}
