import AFNetworkingExample
import Dispatch
import ExampleSupport
import Foundation
import Glibc

/// A python3 HTTP server run as a child process on 127.0.0.1, for testing the AFNetworking
/// example against servers none of our code wrote: python's own `http.server`, or
/// ``responderScript``, a raw responder that sends exact bytes per route.
///
/// The server prints its port on standard output; `init` waits for it (bounded) and `stop()`
/// kills the process and reaps it, so no test leaves one running.
final class AFPythonServer: Sendable {
    let port: UInt16
    private let process: Process
    private let exited = DispatchSemaphore(value: 0)

    /// Starts `python3 -u <arguments>` in `directory` and waits up to 10 s for a stdout line from
    /// which `port` reads the port.
    init(arguments: [String], directory: URL? = nil, port findPort: @escaping @Sendable (String) -> UInt16?) throws {
        process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-u"] + arguments
        if let directory { process.currentDirectoryURL = directory }
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        let exited = self.exited
        process.terminationHandler = { _ in exited.signal() }
        try process.run()

        let found = Protected<UInt16?>(nil)
        let ready = DispatchSemaphore(value: 0)
        let reader = output.fileHandleForReading
        Thread.detachNewThread {
            var text = ""
            while true {
                let chunk = reader.availableData
                if chunk.isEmpty { break }
                text += String(decoding: chunk, as: UTF8.self)
                for line in text.split(separator: "\n") {
                    if found.withLock({ $0 }) == nil, let port = findPort(String(line)) {
                        found.withLock { $0 = port }
                        ready.signal()
                    }
                }
            }
            ready.signal() // the process ended without a port: do not keep init waiting
        }
        _ = ready.wait(timeout: .now() + 10)
        guard let port = found.withLock({ $0 }) else {
            Self.end(process, exited: exited)
            throw AFPythonServerError("python3 \(arguments.prefix(2).joined(separator: " ")) did not report a port within 10 s")
        }
        self.port = port
    }

    /// The raw responder (``responderScript``).
    static func responder() throws -> AFPythonServer {
        try AFPythonServer(arguments: ["-c", responderScript]) { line in
            line.hasPrefix("listening on port ") ? UInt16(line.dropFirst("listening on port ".count)) : nil
        }
    }

    /// `python3 -m http.server` serving `directory`, speaking HTTP/1.1 (keep-alive) or 1.0.
    static func httpServer(serving directory: URL, protocol version: String = "HTTP/1.1") throws -> AFPythonServer {
        try AFPythonServer(arguments: ["-m", "http.server", "--bind", "127.0.0.1", "--protocol", version, "0"], directory: directory) { line in
            // "Serving HTTP on 127.0.0.1 port 41234 (http://127.0.0.1:41234/) ..."
            guard let range = line.range(of: " port ") else { return nil }
            return UInt16(line[range.upperBound...].prefix { $0.isNumber })
        }
    }

    /// Runs `body` with `server`, then stops the server whatever happens.
    static func serving<T>(_ server: AFPythonServer, _ body: (AFPythonServer) async throws -> T) async throws -> T {
        do {
            let value = try await body(server)
            _ = try? await offThePool { server.stop() }
            return value
        } catch {
            _ = try? await offThePool { server.stop() }
            throw error
        }
    }

    /// `http://127.0.0.1:<port><path>`.
    func url(_ path: String) -> URL { URL(string: "http://127.0.0.1:\(port)\(path)")! }

    /// Ends the server and reaps it (waits at most 10 s).
    func stop() {
        Self.end(process, exited: exited)
    }

    /// SIGKILL, not SIGTERM: the server has nothing to clean up, and it runs with SIGTERM
    /// blocked (Foundation's Process keeps the signal mask of the thread that starts it, and
    /// Dispatch's and the cooperative pool's threads block most signals), so a SIGTERM waited out
    /// the whole timeout.
    private static func end(_ process: Process, exited: DispatchSemaphore) {
        guard process.isRunning else { return }
        kill(process.processIdentifier, SIGKILL)
        _ = exited.wait(timeout: .now() + 10)
    }
}

struct AFPythonServerError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Runs one request through an ``AFURLConnectionOperation`` and awaits its completion, at most
/// `timeout` seconds (then the operation is cancelled and this throws).
///
/// Awaits rather than blocks: Swift Testing runs tests on the cooperative pool, which has a
/// thread per core, and a test blocking one for seconds starves the async suites running beside
/// it (their bounded waits time out).
func afFetch(_ request: AFURLRequest, timeout: Double = 30) async throws -> Result<AFHTTPResponse, AFURLError> {
    let operation = AFURLConnectionOperation(request: request)
    let timedOut = Protected(false)
    let result = await withCheckedContinuation { continuation in
        operation.setCompletionBlock { continuation.resume(returning: $0) }
        operation.start()
        DispatchQueue.global().asyncAfter(deadline: .now() + timeout) {
            guard operation.state != .finished else { return }
            timedOut.withLock { $0 = true }
            operation.cancel()
        }
    }
    if result == .failure(.cancelled), timedOut.withLock({ $0 }) {
        throw AFPythonServerError("\(request.httpMethod) \(request.url) did not complete within \(timeout) s")
    }
    return result
}

extension AFPythonServer {
    /// A raw HTTP/1.1 responder: each route sends exact bytes, and connections stay open unless
    /// the route closes them. Every response says, in `X-Request-On-Connection`, how many
    /// requests its connection has carried.
    static let responderScript = #"""
# A raw HTTP/1.1 responder for the AFNetworking example's tests: each route sends exact bytes
# (chunked with extensions and trailers, interim responses, redirects, odd framings), and every
# connection is kept alive unless the route closes it. Prints its port, then serves.
import socket, socketserver, sys, time
from urllib.parse import urlsplit, parse_qs

def pattern(n):
    block = bytes(range(251))
    return (block * (n // 251 + 1))[:n]

class Handler(socketserver.BaseRequestHandler):
    def handle(self):
        self.pending = b""
        served = 0
        while True:
            request = self.read_request()
            if request is None:
                return
            served += 1
            if not self.respond(*request, served):
                return

    def recv(self):
        data = self.request.recv(65536)
        if not data:
            return False
        self.pending += data
        return True

    def read_request(self):
        while b"\r\n\r\n" not in self.pending:
            if not self.recv():
                return None
        head, self.pending = self.pending.split(b"\r\n\r\n", 1)
        lines = head.decode("latin-1").split("\r\n")
        method, target, _ = lines[0].split(" ", 2)
        headers = {}
        for line in lines[1:]:
            name, value = line.split(":", 1)
            headers[name.strip().lower()] = value.strip()
        length = int(headers.get("content-length", "0"))
        while len(self.pending) < length:
            if not self.recv():
                return None
        body, self.pending = self.pending[:length], self.pending[length:]
        return method, target, headers, body

    def send(self, status, fields, body=b"", served=0, close=False):
        head = "HTTP/1.1 %s\r\n" % status
        for name, value in fields + [("X-Request-On-Connection", str(served))]:
            head += "%s: %s\r\n" % (name, value)
        if close:
            head += "Connection: close\r\n"
        self.request.sendall(head.encode("latin-1") + b"\r\n" + body)
        return not close

    def respond(self, method, target, headers, body, served):
        if getattr(self, "close_on_next", False):
            return False  # read the request, then close without a word
        url = urlsplit(target)
        query = {k: v[0] for k, v in parse_qs(url.query).items()}
        path = url.path
        if path == "/echo":
            text = ("%s %s %s|%s" % (method, target, headers.get("authorization", "-"), body.decode())).encode()
            return self.send("200 OK", [("Content-Length", len(text))], b"" if method == "HEAD" else text, served)
        if path == "/chunked":
            self.request.sendall(
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: X-Checksum\r\n"
                + b"X-Request-On-Connection: %d\r\n\r\n" % served
                + b"5;name=value\r\nhello\r\n"
                + b"1; quoted=\"a;b\"\r\n,\r\n"
                + b"006 ;padded\r\n world\r\n"   # RFC 9112: whitespace only before an extension
                + b"0\r\nX-Checksum: abc123\r\nX-Other: 1\r\n\r\n")
            return True
        if path == "/interim":
            self.request.sendall(
                b"HTTP/1.1 100 Continue\r\n\r\n"
                + b"HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n")
            return self.send("200 OK", [("Content-Length", 5)], b"final", served)
        if path == "/redirect":
            location = query.get("to", "/echo")
            return self.send("%s Moved" % query.get("code", "302"), [("Location", location), ("Content-Length", 5)], b"moved", served)
        if path == "/loop":
            return self.send("302 Found", [("Location", "loop"), ("Content-Length", 0)], b"", served)
        if path == "/large":
            data = pattern(int(query["bytes"]))
            if method == "HEAD":
                return self.send("200 OK", [("Content-Length", len(data))], b"", served)
            if query.get("chunked") == "1":
                self.request.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
                step = 100000
                for i in range(0, len(data), step):
                    piece = data[i:i + step]
                    self.request.sendall(b"%x\r\n" % len(piece) + piece + b"\r\n")
                self.request.sendall(b"0\r\n\r\n")
                return True
            return self.send("200 OK", [("Content-Length", len(data))], data, served)
        if path == "/close-on-next":
            self.close_on_next = True
            return self.send("200 OK", [("Content-Length", 2)], b"ok", served)
        if path == "/then-close":
            self.send("200 OK", [("Content-Length", 2)], b"ok", served)
            return False
        if path == "/eof":
            self.request.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nread until the server closes")
            return False
        if path == "/no-content":
            return self.send("204 No Content", [("Content-Length", 10)], b"", served)
        if path == "/not-modified":
            return self.send("304 Not Modified", [("Content-Length", 10)], b"", served)
        if path == "/bad":
            kind = query.get("kind")
            raw = {
                "status": b"HTTP/1.1 abc OK\r\n\r\n",
                "garbage": b"hello there\r\n\r\n",
                "header": b"HTTP/1.1 200 OK\r\nNo colon here\r\n\r\n",
                "length": b"HTTP/1.1 200 OK\r\nContent-Length: 12x\r\n\r\n",
                "chunk": b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n",
                "truncated": b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly ten b",
                "truncated-chunked": b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel",
                "huge-head": b"HTTP/1.1 200 OK\r\nX-Big: " + b"a" * 100000 + b"\r\n\r\n",
                "switch": b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n",
                "empty": b"",
            }.get(kind)
            if kind == "stall":
                self.request.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nab")
                time.sleep(60)
                return False
            self.request.sendall(raw)
            return False
        return self.send("404 Not Found", [("Content-Length", 9)], b"no route\n", served)

class Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True

server = Server(("127.0.0.1", 0), Handler)
print("listening on port %d" % server.server_address[1], flush=True)
server.serve_forever()
"""#
}
