/// One request line, parsed. Parsing happens on the I/O thread; only valid requests reach the
/// journal thread, so bad input costs the journal nothing.
enum DaemonRequest: Equatable, Sendable {
    case append(String)
    case count
    case ping
    /// Blocks the journal thread this long: `STALL <ms>`, only with `--debug-stall-requests`
    /// (a test's way to make the watchdog see a stuck thread).
    case stall(milliseconds: Int)

    /// The longest request line accepted, newline excluded.
    static let maximumLength = 4096

    /// The longest `STALL` accepted, in milliseconds.
    static let maximumStall = 60_000

    /// Parses one line (without its newline), or returns the error reply to send.
    static func parse(_ line: [UInt8], allowsStall: Bool = false) -> Result<DaemonRequest, DaemonReplyError> {
        var bytes = line[...]
        if bytes.last == UInt8(ascii: "\r") { bytes.removeLast() } // telnet / nc -C
        guard let text = String(validating: bytes, as: UTF8.self) else { return .failure(.notUTF8) }
        if text.isEmpty { return .failure(.empty) }
        let command = text.prefix { $0 != " " }
        let argument = text.dropFirst(command.count).drop { $0 == " " }
        switch asciiUppercased(command) {
        case "APPEND":
            if argument.isEmpty { return .failure(.missingText) }
            if argument.unicodeScalars.contains(where: isRefusedInRecord) { return .failure(.controlCharacters) }
            return .success(.append(String(argument)))
        case "COUNT": return argument.isEmpty ? .success(.count) : .failure(.unexpectedArgument("COUNT"))
        case "PING": return argument.isEmpty ? .success(.ping) : .failure(.unexpectedArgument("PING"))
        case "STALL" where allowsStall:
            guard let milliseconds = Int(argument), (0...maximumStall).contains(milliseconds) else {
                return .failure(.badStall)
            }
            return .success(.stall(milliseconds: milliseconds))
        default: return .failure(.unknownCommand(String(command)))
        }
    }

    /// Commands match ASCII letters case-insensitively, and nothing else: Unicode's case mapping
    /// would make `pıng` (dotless ı) and `ﬀ`-ligature spellings into commands.
    private static func asciiUppercased(_ text: Substring) -> String {
        var scalars = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            scalars.append(("a"..."z").contains(scalar) ? Unicode.Scalar(UInt8(scalar.value) - 32) : scalar)
        }
        return String(scalars)
    }

    /// The scalars a record may not hold: control characters (a tab or CR would break the
    /// journal's `sequence<TAB>text` lines), line and paragraph separators (U+2028, U+2029: a
    /// line break to many readers) and format characters (U+202E reverses the text shown after
    /// it; U+200B and U+2060 hide text). The same ones an `ERR` echo escapes, but for the
    /// zero-width joiner and non-joiner (U+200D, U+200C), which emoji sequences and Indic
    /// scripts need, and private-use and unassigned scalars, which are text to a reader and may
    /// be assigned later.
    static func isRefusedInRecord(_ scalar: Unicode.Scalar) -> Bool {
        if scalar == "\u{200C}" || scalar == "\u{200D}" { return false }
        return switch scalar.properties.generalCategory {
        case .control, .format, .lineSeparator, .paragraphSeparator: true
        default: false
        }
    }
}

/// An error reply: `ERR <reason>`, after which the connection keeps being served.
enum DaemonReplyError: Error, Equatable, Sendable {
    case empty, notUTF8, missingText, controlCharacters, tooLong, badStall
    case unknownCommand(String)
    case unexpectedArgument(String)
    case journal(errno: Int32)
    case shuttingDown

    var reply: String {
        switch self {
        case .empty: "ERR empty request (expected APPEND <text>, COUNT or PING)"
        case .notUTF8: "ERR request is not valid UTF-8"
        case .missingText: "ERR APPEND needs text: APPEND <text>"
        case .controlCharacters: "ERR control characters (tabs included) are not allowed in a record"
        case .tooLong: "ERR request longer than \(DaemonRequest.maximumLength) bytes"
        case .badStall: "ERR STALL needs milliseconds, 0 to \(DaemonRequest.maximumStall)"
        case .unknownCommand(let command):
            "ERR unknown command \"\(Self.printable(command, maximumBytes: Self.echoBytes))\" (expected APPEND <text>, COUNT or PING)"
        case .unexpectedArgument(let command): "ERR \(command) takes no argument"
        case .journal(let errno): "ERR journal write failed (errno \(errno)); the record was not stored"
        case .shuttingDown: "ERR shutting down; request not accepted"
        }
    }

    /// The most bytes of a client's text echoed in a reply, escapes included.
    static let echoBytes = 64

    /// What the client sent, safe to echo in a reply line: control and format characters (a
    /// stray `\r` would move a terminal's cursor; a `\n` would split the reply) are shown as
    /// escapes, `\r` for a carriage return and `\u{…}` for the others.
    ///
    /// Cut to at most `maximumBytes` bytes of UTF-8 (then ending in `…`, counted), between
    /// scalars: a count of characters bounds nothing, as one character (a letter followed by
    /// thousands of zero-width joiners) can be a whole request line long, and each joiner
    /// escapes to 8 bytes.
    static func printable(_ text: String, maximumBytes: Int = .max) -> String {
        var result = ""
        var bytes = 0
        let ellipsis = "…"
        let scalars = Array(text.unicodeScalars)
        for (index, scalar) in scalars.enumerated() {
            let piece = escaped(scalar)
            let room = index == scalars.count - 1 ? maximumBytes : maximumBytes - ellipsis.utf8.count
            if bytes + piece.utf8.count > room {
                result += ellipsis
                break
            }
            result += piece
            bytes += piece.utf8.count
        }
        return result
    }

    private static func escaped(_ scalar: Unicode.Scalar) -> String {
        switch scalar.properties.generalCategory {
        case .control, .format, .lineSeparator, .paragraphSeparator, .surrogate, .privateUse, .unassigned:
            scalar == "\r" ? "\\r" : scalar == "\t" ? "\\t" : "\\u{\(String(scalar.value, radix: 16, uppercase: true))}"
        default:
            String(scalar)
        }
    }
}
