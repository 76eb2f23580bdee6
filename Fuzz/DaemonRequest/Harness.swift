// libFuzzer target for the daemon example's request parser (LineSplitter and DaemonRequest),
// compiled with their sources by scripts/fuzz.sh. Invariants checked on every input:
// - one read, reads in pieces whose sizes the input chooses, and one byte at a time give the same
//   requests and error replies, in the same order;
// - each result answers one line: no more results than line feeds plus lines cut as too long;
// - every error reply is one line of bounded size, and an APPEND's text has no control, separator
//   or format character (but the zero-width joiners);
// - a command is spelled in ASCII letters;
// - fed at most N requests at a time, the rest fed again, the splitter gives the same requests.
// A broken invariant traps, which libFuzzer reports as a crash with the input saved.

/// The bound on skipping an over-long line, smaller than the daemon's (64 KiB) so that inputs
/// under `-max_len` reach an endless line.
let skipLimit = 4096

func results(of bytes: [UInt8], sizes: [Int], allowsStall: Bool) -> [Result<DaemonRequest, DaemonReplyError>] {
    var splitter = LineSplitter(allowsStall: allowsStall, skipLimit: skipLimit)
    var all: [Result<DaemonRequest, DaemonReplyError>] = []
    var offset = 0, turn = 0
    while offset < bytes.count {
        let size = min(max(sizes[turn % sizes.count], 1), bytes.count - offset)
        turn += 1
        all += splitter.feed(bytes[offset..<offset + size])
        offset += size
    }
    return all
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ count: Int) -> CInt {
    guard count > 0 else { return 0 }
    let control = data[0]
    let bytes = Array(UnsafeBufferPointer(start: data + 1, count: count - 1))
    let allowsStall = control & 0x80 != 0
    let whole = results(of: bytes, sizes: [max(bytes.count, 1)], allowsStall: allowsStall)
    let pieces = results(of: bytes, sizes: [Int(control & 0x0F) + 1, Int(control >> 4 & 0x07) + 2, 7], allowsStall: allowsStall)
    let single = results(of: bytes, sizes: [1], allowsStall: allowsStall)
    check(whole == pieces, "pieces disagree with one read")
    check(whole == single, "byte by byte disagrees with one read")
    let lineFeeds = bytes.lazy.filter { $0 == UInt8(ascii: "\n") }.count
    let cut = whole.lazy.filter { $0 == .failure(.tooLong) }.count
    check(whole.count <= lineFeeds + cut, "\(whole.count) results for \(lineFeeds) lines")
    for result in whole {
        switch result {
        case .failure(let error):
            let reply = error.reply
            check(!reply.utf8.contains(UInt8(ascii: "\n")) && !reply.utf8.contains(UInt8(ascii: "\r")), "a reply of two lines: \(reply)")
            check(reply.utf8.count <= 200, "a reply of \(reply.utf8.count) bytes")
        case .success(.append(let text)):
            check(!text.unicodeScalars.contains { $0.properties.generalCategory == .control }, "control characters stored")
            check(!text.unicodeScalars.contains { [.format, .lineSeparator, .paragraphSeparator].contains($0.properties.generalCategory)
                && $0 != "\u{200C}" && $0 != "\u{200D}" }, "a separator or format character stored")
        case .success:
            break
        }
    }
    // Commands match ASCII letters only: a line that parsed as a request spells its command in ASCII.
    for line in bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
    where line.count <= DaemonRequest.maximumLength {
        if case .success = DaemonRequest.parse(Array(line), allowsStall: allowsStall) {
            check(line.prefix { $0 != UInt8(ascii: " ") }.allSatisfy { $0 < 0x80 }, "a command with a non-ASCII letter")
        }
    }
    checkLimitedFeeds(bytes, whole: whole, allowsStall: allowsStall, limit: Int(control & 0x07) + 1)
    return 0
}

/// Fed with at most `limit` requests a call, the rest of each feed fed again, the splitter gives
/// what one read gave, and takes every byte unless the line became endless.
func checkLimitedFeeds(_ bytes: [UInt8], whole: [Result<DaemonRequest, DaemonReplyError>], allowsStall: Bool, limit: Int) {
    var splitter = LineSplitter(allowsStall: allowsStall, skipLimit: skipLimit)
    var all: [Result<DaemonRequest, DaemonReplyError>] = []
    var rest = bytes[...]
    while !rest.isEmpty {
        let (requests, consumed) = splitter.feed(rest, maximumRequests: limit)
        check(requests.count <= limit, "\(requests.count) requests past a limit of \(limit)")
        all += requests
        rest = rest.dropFirst(consumed)
        if consumed == 0 { break }
    }
    check(all == whole, "feeds of at most \(limit) requests disagree with one read")
    check(rest.isEmpty || splitter.isEndless, "bytes left untaken by a splitter that is not at an endless line")
}

/// A broken invariant: a crash with its message (`precondition` drops messages under -O).
func check(_ condition: Bool, _ message: @autoclosure () -> String) {
    if !condition { fatalError("invariant broken: \(message())") }
}
