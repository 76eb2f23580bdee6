/// One request line, parsed. Parsing happens on the I/O thread; only valid requests reach the
/// journal thread, so bad input costs the journal nothing.
enum DaemonRequest: Equatable, Sendable {
    case append(String)
    case count
    case ping

    /// The longest request line accepted, newline excluded.
    static let maximumLength = 4096

    /// Parses one line (without its newline), or returns the error reply to send.
    static func parse(_ line: [UInt8]) -> Result<DaemonRequest, DaemonReplyError> {
        var bytes = line[...]
        if bytes.last == UInt8(ascii: "\r") { bytes.removeLast() } // telnet / nc -C
        guard let text = String(validating: bytes, as: UTF8.self) else { return .failure(.notUTF8) }
        if text.isEmpty { return .failure(.empty) }
        let command = text.prefix { $0 != " " }
        let argument = text.dropFirst(command.count).drop { $0 == " " }
        switch command.uppercased() {
        case "APPEND":
            if argument.isEmpty { return .failure(.missingText) }
            if argument.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) {
                return .failure(.controlCharacters)
            }
            return .success(.append(String(argument)))
        case "COUNT": return argument.isEmpty ? .success(.count) : .failure(.unexpectedArgument("COUNT"))
        case "PING": return argument.isEmpty ? .success(.ping) : .failure(.unexpectedArgument("PING"))
        default: return .failure(.unknownCommand(String(command.prefix(32))))
        }
    }
}

/// An error reply: `ERR <reason>`, after which the connection keeps being served.
enum DaemonReplyError: Error, Equatable, Sendable {
    case empty, notUTF8, missingText, controlCharacters, tooLong
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
        case .unknownCommand(let command): "ERR unknown command \"\(command)\" (expected APPEND <text>, COUNT or PING)"
        case .unexpectedArgument(let command): "ERR \(command) takes no argument"
        case .journal(let errno): "ERR journal write failed (errno \(errno)); the record was not stored"
        case .shuttingDown: "ERR shutting down; request not accepted"
        }
    }
}
