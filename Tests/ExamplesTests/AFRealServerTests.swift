import AFNetworkingExample
import Foundation
import Testing

/// The AFNetworking example against servers none of our code wrote: python3's `http.server`,
/// and a raw python3 responder that sends exact bytes (see ``AFPythonServer``).
///
/// Serialized: one python3 server at a time. Run in parallel, their start-ups and large bodies
/// came in one burst of CPU that, on a loaded 2-core machine, made other suites' bounded waits
/// (10 s) time out.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct AFRealServerTests {
    /// `count` bytes of the responder's pattern (0, 1, ... 250, 0, 1, ...), built by whole
    /// blocks (a per-byte closure takes seconds for 50 MB in a debug build under a sanitizer).
    static func pattern(_ count: Int) -> [UInt8] {
        let block = (0..<251).map { UInt8($0) }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(count + block.count)
        while bytes.count < count { bytes.append(contentsOf: block) }
        bytes.removeLast(bytes.count - count)
        return bytes
    }

    /// Whether two byte arrays are equal, compared with `memcmp` (`==` goes element by element in
    /// a debug build).
    static func same(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        a.count == b.count && (a.isEmpty || a.withUnsafeBytes { a in b.withUnsafeBytes { b in memcmp(a.baseAddress!, b.baseAddress!, a.count) == 0 } })
    }

    /// Runs `body` with a fresh responder, stopped afterwards whatever happens.
    static func withResponder<T>(_ body: (AFPythonServer) async throws -> T) async throws -> T {
        try await AFPythonServer.serving(try await offThePool { try AFPythonServer.responder() }, body)
    }

    /// Writes `files` (path: bytes) into a fresh temporary directory, serves it with
    /// `python3 -m http.server` speaking `version`, runs `body`, and removes both.
    static func withHTTPServer<T>(files: [String: [UInt8]], protocol version: String = "HTTP/1.1",
                                  _ body: (AFPythonServer) async throws -> T) async throws -> T {
        let directory = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("af-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        for (path, bytes) in files {
            let file = directory.appendingPathComponent(path)
            try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
            try Data(bytes).write(to: file)
        }
        let server = try await offThePool { try AFPythonServer.httpServer(serving: directory, protocol: version) }
        return try await AFPythonServer.serving(server, body)
    }

    // MARK: - python3 -m http.server

    @Test("http.server: 10 MB and 50 MB files arrive whole")
    func httpServerLargeFiles() async throws {
        let sizes = [10 << 20, 50 << 20]
        let files = Dictionary(uniqueKeysWithValues: sizes.map { ("\($0).bin", Self.pattern($0)) })
        try await Self.withHTTPServer(files: files) { server async throws in
            for size in sizes {
                let response = try await afFetch(AFURLRequest(url: server.url("/\(size).bin"))).get()
                #expect(response.statusCode == 200)
                #expect(response.body.count == size)
                #expect(Self.same(response.body, files["\(size).bin"] ?? []))
            }
        }
    }

    @Test("http.server: a directory without its slash is a 301 with a relative Location, followed")
    func httpServerDirectoryRedirect() async throws {
        for version in ["HTTP/1.1", "HTTP/1.0"] {
            try await Self.withHTTPServer(files: ["docs/index.html": Array("hi\n".utf8)], protocol: version) { server async throws in
                let response = try await afFetch(AFURLRequest(url: server.url("/docs"))).get()
                #expect(response.statusCode == 200, "\(version)")
                #expect(response.bodyText == "hi\n", "\(version)")
                #expect(response.url == server.url("/docs/"), "\(version)")
                let missing = try await afFetch(AFURLRequest(url: server.url("/missing"))).get()
                #expect(missing.statusCode == 404, "\(version)")
                #expect(missing.bodyText.contains("File not found"), "\(version)")
            }
        }
    }

    @Test("http.server: HEAD completes with the headers and no body")
    func httpServerHead() async throws {
        try await Self.withHTTPServer(files: ["f.bin": Self.pattern(1000)]) { server async throws in
            let response = try await afFetch(AFURLRequest(url: server.url("/f.bin"), httpMethod: "HEAD")).get()
            #expect(response.statusCode == 200)
            #expect(response.headers["content-length"] == "1000")
            #expect(response.body.isEmpty)
        }
    }

    @Test("http.server: a POST with Expect: 100-continue gets 100 Continue first; the status is the final 501")
    func httpServerContinue() async throws {
        try await Self.withHTTPServer(files: [:]) { server async throws in
            let request = AFURLRequest(url: server.url("/upload"), httpMethod: "POST",
                                       allHTTPHeaderFields: ["Expect": "100-continue"], httpBody: Array("data".utf8))
            let response = try await afFetch(request).get()
            #expect(response.statusCode == 501)
            #expect(response.bodyText.contains("Unsupported method"))
        }
    }

    // MARK: - Framing, from the raw responder

    @Test("chunked with extensions and trailers, on a connection the server keeps open, completes; the next request reuses it")
    func chunkedKeepAlive() async throws {
        try await Self.withResponder { server async throws in
            let response = try await afFetch(AFURLRequest(url: server.url("/chunked"))).get()
            #expect(response.statusCode == 200)
            #expect(response.bodyText == "hello, world")
            #expect(response.trailers == ["x-checksum": "abc123", "x-other": "1"])
            let again = try await afFetch(AFURLRequest(url: server.url("/chunked"))).get()
            #expect(again.bodyText == "hello, world")
            #expect(again.headers["x-request-on-connection"] == "2", "the kept-alive connection carried the second request")
        }
    }

    @Test("100 Continue and 103 Early Hints are skipped: the status is the final one")
    func interimResponses() async throws {
        try await Self.withResponder { server async throws in
            let response = try await afFetch(AFURLRequest(url: server.url("/interim"))).get()
            #expect(response.statusCode == 200)
            #expect(response.bodyText == "final")
            #expect(response.headers["link"] == nil)
        }
    }

    @Test("an 8 MB chunked body arrives whole")
    func largeChunked() async throws {
        try await Self.withResponder { server async throws in
            let size = 8 << 20
            let response = try await afFetch(AFURLRequest(url: server.url("/large?bytes=\(size)&chunked=1"))).get()
            #expect(response.body.count == size)
            #expect(Self.same(response.body, Self.pattern(size)))
        }
    }

    @Test("no length and not chunked: the body is read to the close")
    func bodyUntilClose() async throws {
        try await Self.withResponder { server async throws in
            let response = try await afFetch(AFURLRequest(url: server.url("/eof"))).get()
            #expect(response.bodyText == "read until the server closes")
        }
    }

    @Test("204 and 304 complete without a body, and their connection carries the next request")
    func noBodyStatuses() async throws {
        try await Self.withResponder { server async throws in
            for (path, status) in [("/no-content", 204), ("/not-modified", 304)] {
                let response = try await afFetch(AFURLRequest(url: server.url(path))).get()
                #expect(response.statusCode == status)
                #expect(response.body.isEmpty)
            }
            let next = try await afFetch(AFURLRequest(url: server.url("/echo"))).get()
            #expect(next.headers["x-request-on-connection"] == "3")
        }
    }

    @Test("a kept-alive connection the server closed is not used again: the next request still succeeds")
    func serverClosedIdleConnection() async throws {
        try await Self.withResponder { server async throws in
            for _ in 0..<3 {
                let response = try await afFetch(AFURLRequest(url: server.url("/then-close"))).get()
                #expect(response.bodyText == "ok")
                #expect(response.headers["x-request-on-connection"] == "1")
            }
        }
    }

    @Test("a kept-alive connection the server closes on reading the next request: an idempotent request is sent again on a new one")
    func serverClosedOnNextRequest() async throws {
        try await Self.withResponder { server async throws in
            #expect(try await afFetch(AFURLRequest(url: server.url("/close-on-next"))).get().bodyText == "ok")
            let response = try await afFetch(AFURLRequest(url: server.url("/echo"))).get()
            #expect(response.bodyText == "GET /echo -|")
            #expect(response.headers["x-request-on-connection"] == "1", "sent again on a new connection")
        }
    }

    @Test("a POST never goes on a kept-alive connection, which the server might close under it")
    func postTakesANewConnection() async throws {
        try await Self.withResponder { server async throws in
            #expect(try await afFetch(AFURLRequest(url: server.url("/close-on-next"))).get().bodyText == "ok")
            let post = try await afFetch(AFURLRequest(url: server.url("/echo"), httpMethod: "POST", httpBody: Array("once".utf8))).get()
            #expect(post.bodyText == "POST /echo -|once")
            #expect(post.headers["x-request-on-connection"] == "1")
        }
    }

    // MARK: - Redirects

    @Test("redirects: 303, and 301/302 for POST, become GET; 307 and 308 keep method and body; Location may be relative")
    func redirectMethods() async throws {
        try await Self.withResponder { server async throws in
            let cases: [(code: Int, method: String, expected: String)] = [
                (301, "POST", "GET"), (302, "POST", "GET"), (303, "POST", "GET"), (307, "POST", "POST"), (308, "POST", "POST"),
                (301, "PUT", "PUT"), (303, "HEAD", "HEAD"), (302, "GET", "GET"),
            ]
            for (code, method, expected) in cases {
                for location in ["echo", "/echo", "http://127.0.0.1:\(server.port)/echo", "http://localhost:\(server.port)/echo"] {
                    let target = location.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
                    let request = AFURLRequest(url: server.url("/redirect?code=\(code)&to=\(target)"), httpMethod: method,
                                               allHTTPHeaderFields: ["Authorization": "secret"], httpBody: method == "GET" ? [] : Array("payload".utf8))
                    let response = try await afFetch(request).get()
                    let label = "\(code) \(method) to \(location)"
                    #expect(response.statusCode == 200, "\(label)")
                    #expect(response.url?.path == "/echo", "\(label)")
                    if expected == "HEAD" { continue }
                    let body = expected == "GET" ? "" : "payload"
                    let authorization = location.contains("localhost") ? "-" : "secret"
                    #expect(response.bodyText == "\(expected) /echo \(authorization)|\(body)", "\(label)")
                }
            }
        }
    }

    @Test("a redirect loop ends with tooManyRedirects; maximumRedirects bounds it")
    func redirectLoop() async throws {
        try await Self.withResponder { server async throws in
            #expect(try await afFetch(AFURLRequest(url: server.url("/loop"))) == .failure(.tooManyRedirects))
            var once = AFURLRequest(url: server.url("/redirect?code=302&to=/echo"))
            once.maximumRedirects = 0
            #expect(try await afFetch(once) == .failure(.tooManyRedirects))
            once.maximumRedirects = 1
            #expect(try await afFetch(once).get().statusCode == 200)
        }
    }

    // MARK: - Malformed and stalled responses

    @Test("malformed responses fail with badServerResponse saying what is wrong")
    func malformed() async throws {
        try await Self.withResponder { server async throws in
            let cases: [(String, AFHTTPResponseParser.Error)] = [
                ("status", .invalidStatusLine("HTTP/1.1 abc OK")),
                ("garbage", .invalidStatusLine("hello there")),
                ("header", .invalidHeaderLine("No colon here")),
                ("length", .invalidContentLength("12x")),
                ("chunk", .invalidChunk("chunk size \"zz\" is not hexadecimal")),
                ("truncated", .connectionClosedEarly("with 90 of 100 body bytes (Content-Length) missing")),
                ("truncated-chunked", .connectionClosedEarly("in the chunked body, before its last chunk and trailers")),
                ("huge-head", .headTooLarge(limit: 64 * 1024)),
                ("switch", .unexpectedSwitchingProtocols),
                ("empty", .connectionClosedEarly("before any byte of the response")),
            ]
            for (kind, error) in cases {
                #expect(try await afFetch(AFURLRequest(url: server.url("/bad?kind=\(kind)"))) == .failure(.badServerResponse(error)), "\(kind)")
            }
        }
    }

    @Test("a server that stops sending mid-body times out instead of hanging")
    func stalledBodyTimesOut() async throws {
        try await Self.withResponder { server async throws in
            var request = AFURLRequest(url: server.url("/bad?kind=stall"))
            request.timeoutInterval = .milliseconds(300)
            #expect(try await afFetch(request, timeout: 20) == .failure(.timedOut))
        }
    }

    @Test("URLs the example cannot reach fail with unsupportedURL")
    func unsupportedURLs() async throws {
        for text in ["https://127.0.0.1/", "http://example.com/", "ftp://127.0.0.1/"] {
            #expect(try await afFetch(AFURLRequest(url: URL(string: text)!)) == .failure(.unsupportedURL(text)))
        }
    }
}
