import ExampleSupport
import Glibc
import LongThreads

/// A tiny HTTP/1.1 server on 127.0.0.1 (an ephemeral port), so the example fetches over real
/// sockets without leaving the machine. It runs on its own LongThread, `AFNetworking.server`,
/// through descriptor sources.
///
/// Routes: `GET /hello/<name>` answers `200` with `hello <name>`; `GET /slow` is read and never
/// answered (the connection stays open until the client goes), which is what a request cancelled
/// mid-flight needs; anything else is `404`.
public final class AFExampleServer: @unchecked Sendable {
    // MARK: Immutable
    /// The port it listens on.
    public let port: UInt16
    private let thread: LongThread
    private let listener: Int32

    // MARK: Guarded by counters
    private let counters = Protected((requests: 0, slow: 0))
    private let slowArrived: @Sendable () -> Void

    // MARK: AFNetworking.server only
    private var listenSource: DescriptorSource?
    private var clients: [Int32: Client] = [:]

    /// Starts listening. `onSlowRequest` is called (on the server thread) each time a `/slow`
    /// request has been read, so a caller knows that request is in flight.
    public init(onSlowRequest: @escaping @Sendable () -> Void = {}) throws {
        guard let (fd, port) = AFSocket.listenOnLoopback() else { throw AFURLError.cannotConnect(errno: errno) }
        self.listener = fd
        self.port = port
        self.slowArrived = onSlowRequest
        thread = try LongThread(name: "AFNetworking.server")
        try thread.sync { [self] in
            listenSource = try thread.watch(listener, for: .readable) { [self] _ in acceptReady() }
        }
    }

    /// Requests read so far (all routes).
    public var requestsServed: Int { counters.withLock { $0.requests } }

    /// Closes every connection and the listener, and ends the thread.
    public func stop() {
        try? thread.sync { [self] in
            listenSource?.cancel()
            close(listener)
            for client in clients.values { drop(client) }
        }
        thread.stop()
    }

    // MARK: - AFNetworking.server

    private func acceptReady() {
        while true {
            let fd = accept(listener, nil, nil)
            if fd < 0 { return }
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            let client = Client(fd: fd)
            clients[fd] = client
            client.source = try? thread.watch(fd, for: .readable) { [self] _ in readReady(client) }
            if client.source == nil { drop(client) }
        }
    }

    private func readReady(_ client: Client) {
        var buffer = [UInt8](repeating: 0, count: 4096)
        let n = read(client.fd, &buffer, buffer.count)
        if n < 0, errno == EAGAIN { return }
        if n <= 0 { // the client went away (a cancelled request does)
            drop(client)
            return
        }
        if client.answered { return }
        client.request.append(contentsOf: buffer[0..<n])
        guard let end = client.request.firstRange(of: Array("\r\n\r\n".utf8)) else { return }
        let head = String(decoding: client.request[..<end.lowerBound], as: UTF8.self)
        let requestLine = head.split(separator: "\r\n").first.map(String.init) ?? ""
        let parts = requestLine.split(separator: " ")
        client.answered = true
        counters.withLock { $0.requests += 1 }
        guard parts.count == 3, parts[0] == "GET" else { return respond(client, status: "400 Bad Request", body: "bad request\n") }
        let path = parts[1]
        if path == "/slow" {
            counters.withLock { $0.slow += 1 }
            slowArrived()
            return // never answered: the client cancels or goes away
        }
        if path.hasPrefix("/hello/") {
            return respond(client, status: "200 OK", body: "hello \(path.dropFirst("/hello/".count))\n")
        }
        respond(client, status: "404 Not Found", body: "no route for \(path)\n")
    }

    private func respond(_ client: Client, status: String, body: String) {
        let response = "HTTP/1.1 \(status)\r\nContent-Type: text/plain\r\nContent-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n\(body)"
        // Small enough for an empty socket buffer: one send does it.
        _ = AFSocket.send(client.fd, Array(response.utf8)[...])
        drop(client)
    }

    private func drop(_ client: Client) {
        guard clients.removeValue(forKey: client.fd) != nil else { return }
        client.source?.cancel()
        close(client.fd)
    }

    /// A connection. AFNetworking.server only.
    private final class Client: @unchecked Sendable {
        let fd: Int32
        var request: [UInt8] = []
        var answered = false
        var source: DescriptorSource?
        init(fd: Int32) { self.fd = fd }
    }
}
