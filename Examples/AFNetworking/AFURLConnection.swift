import Foundation
import Glibc
import LongThreads

/// A GET request to 127.0.0.1.
public struct AFURLRequest: Sendable, Equatable {
    public var port: UInt16
    public var path: String
    public init(port: UInt16, path: String) {
        self.port = port
        self.path = path
    }
}

/// A parsed HTTP/1.1 response.
public struct AFHTTPResponse: Sendable, Equatable {
    public var statusCode: Int
    public var headers: [String: String]
    public var body: [UInt8]
    public var bodyText: String { String(decoding: body, as: UTF8.self) }
}

/// Why a request failed.
public enum AFURLError: Error, Equatable, Sendable {
    /// The operation was cancelled before it finished (NSURLErrorCancelled).
    case cancelled
    /// The connection could not be made: `ECONNREFUSED` for a closed port (NSURLErrorCannotConnectToHost).
    case cannotConnect(errno: Int32)
    /// The connection broke while sending or receiving.
    case networkConnectionLost(errno: Int32)
    /// The server's bytes are not an HTTP/1.1 response.
    case badServerResponse
}

/// The client side of one request, the role NSURLConnection plays for AFURLConnectionOperation:
/// a non-blocking socket whose readiness reaches the network thread through descriptor sources,
/// so the thread sleeps while the request waits. Made, used and ended on the network thread only.
final class AFURLConnection: @unchecked Sendable {
    // MARK: Immutable
    private let request: AFURLRequest
    private let thread: LongThread
    private let modes: [RunLoop.Mode]
    /// Called once, on the network thread, with the outcome.
    private let didFinish: (Result<AFHTTPResponse, AFURLError>) -> Void

    // MARK: Network thread only
    private var fd: Int32 = -1
    private var source: DescriptorSource?
    private var unsent: ArraySlice<UInt8> = []
    private var received: [UInt8] = []
    private var finished = false

    init(request: AFURLRequest, thread: LongThread, modes: [RunLoop.Mode],
         didFinish: @escaping (Result<AFHTTPResponse, AFURLError>) -> Void) {
        self.request = request
        self.thread = thread
        self.modes = modes
        self.didFinish = didFinish
    }

    /// `-[NSURLConnection start]`: opens the socket and starts connecting.
    func start() {
        fd = AFSocket.makeTCP()
        if fd < 0 { return finish(.failure(.cannotConnect(errno: errno))) }
        unsent = Array("GET \(request.path) HTTP/1.1\r\nHost: 127.0.0.1:\(request.port)\r\nConnection: close\r\n\r\n".utf8)[...]
        switch AFSocket.connect(fd, port: request.port) {
        case 0, EINPROGRESS:
            // Connected (or connecting): the socket turns writable when the handshake is done,
            // or reports the refusal as an error.
            watch(.writable) { [self] _ in writable() }
        case let error:
            finish(.failure(.cannotConnect(errno: error)))
        }
    }

    /// `-[NSURLConnection cancel]`: ends the request now, if it has not ended yet.
    func cancel() {
        finish(.failure(.cancelled))
    }

    private func watch(_ events: DescriptorEvents, _ handler: @escaping @Sendable (DescriptorEvents) -> Void) {
        source?.cancel()
        do {
            source = try thread.watch(fd, for: events, modes: modes, handler)
        } catch {
            finish(.failure(.networkConnectionLost(errno: EBADF)))
        }
    }

    private func writable() {
        if received.isEmpty, unsent.count > 0 {
            let error = AFSocket.pendingError(fd)
            if error != 0 { return finish(.failure(.cannotConnect(errno: error))) }
        }
        let n = AFSocket.send(fd, unsent)
        if n == -Int(EAGAIN) { return }
        if n < 0 { return finish(.failure(.networkConnectionLost(errno: Int32(-n)))) }
        unsent = unsent.dropFirst(n)
        if unsent.isEmpty { watch(.readable) { [self] _ in readable() } }
    }

    private func readable() {
        var buffer = [UInt8](repeating: 0, count: 16384)
        let n = read(fd, &buffer, buffer.count)
        if n < 0 {
            if errno == EAGAIN || errno == EINTR { return }
            return finish(.failure(.networkConnectionLost(errno: errno)))
        }
        if n > 0 { received.append(contentsOf: buffer[0..<n]) }
        switch AFHTTPParser.parse(received, atEnd: n == 0) {
        case .incomplete: return
        case .complete(let response): finish(.success(response))
        case .invalid: finish(.failure(.badServerResponse))
        }
    }

    /// Ends the request once: sources cancelled before the socket is closed.
    private func finish(_ result: Result<AFHTTPResponse, AFURLError>) {
        guard !finished else { return }
        finished = true
        source?.cancel()
        source = nil
        if fd >= 0 { close(fd) }
        fd = -1
        didFinish(result)
    }
}

/// Just enough HTTP/1.1 response parsing: a status line, headers, a `Content-Length` body (or a
/// body that ends when the server closes).
enum AFHTTPParser {
    enum Outcome { case incomplete, complete(AFHTTPResponse), invalid }

    static func parse(_ bytes: [UInt8], atEnd: Bool) -> Outcome {
        guard let headEnd = bytes.firstRange(of: Array("\r\n\r\n".utf8)) else {
            return atEnd ? .invalid : .incomplete
        }
        let lines = String(decoding: bytes[..<headEnd.lowerBound], as: UTF8.self).components(separatedBy: "\r\n")
        let status = lines[0].split(separator: " ", maxSplits: 2)
        guard status.count >= 2, status[0].hasPrefix("HTTP/1."), let code = Int(status[1]) else { return .invalid }
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { return .invalid }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        let body = Array(bytes[headEnd.upperBound...])
        if let length = headers["content-length"].flatMap({ Int($0) }) {
            if body.count >= length { return .complete(AFHTTPResponse(statusCode: code, headers: headers, body: Array(body.prefix(length)))) }
            return atEnd ? .invalid : .incomplete
        }
        return atEnd ? .complete(AFHTTPResponse(statusCode: code, headers: headers, body: body)) : .incomplete
    }
}
