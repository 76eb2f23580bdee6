import Foundation
import Glibc

/// A request: AF's `NSURLRequest`, with the same names. `http` URLs whose host is an IPv4 address
/// or `localhost`: the example connects without resolving names (a blocking `getaddrinfo` would
/// stall the network thread; AF had CFNetwork's asynchronous resolver).
///
/// A value: make it on any thread and hand it to an ``AFURLConnectionOperation``.
public struct AFURLRequest: Sendable, Equatable {
    /// Where to send it: `http://<IPv4 address or localhost>[:port]/path[?query]`.
    public var url: URL
    /// The method, `GET` by default. `HEAD` responses have no body.
    public var httpMethod: String
    /// Header fields to send besides `Host`, `Content-Length` and `Connection`, which the
    /// connection writes itself.
    public var allHTTPHeaderFields: [String: String]
    /// The body, sent with a `Content-Length` (empty: none).
    public var httpBody: [UInt8]
    /// How long the request may go without progress (connecting, sending or receiving) before it
    /// fails with ``AFURLError/timedOut``. NSURLRequest's default: 60 seconds.
    public var timeoutInterval: Duration
    /// How many redirects are followed before the request fails with
    /// ``AFURLError/tooManyRedirects``.
    public var maximumRedirects: Int

    /// A request for `url`.
    ///
    /// - Parameters:
    ///   - url: an `http` URL with an IPv4 address or `localhost` as host.
    ///   - httpMethod: the method.
    ///   - allHTTPHeaderFields: extra header fields.
    ///   - httpBody: the body.
    ///   - timeoutInterval: the longest wait without progress.
    ///   - maximumRedirects: the most redirects followed.
    public init(url: URL, httpMethod: String = "GET", allHTTPHeaderFields: [String: String] = [:],
                httpBody: [UInt8] = [], timeoutInterval: Duration = .seconds(60), maximumRedirects: Int = 10) {
        self.url = url
        self.httpMethod = httpMethod
        self.allHTTPHeaderFields = allHTTPHeaderFields
        self.httpBody = httpBody
        self.timeoutInterval = timeoutInterval
        self.maximumRedirects = maximumRedirects
    }

    /// A `GET` of `path` on 127.0.0.1 at `port`.
    ///
    /// - Parameters:
    ///   - port: the server's port.
    ///   - path: the path, with a leading slash (and a query, if any).
    public init(port: UInt16, path: String) {
        self.init(url: URL(string: "http://127.0.0.1:\(port)\(path)")!)
    }
}

/// Where a request goes and what it sends: its URL taken apart. Network thread only.
struct AFRequestTarget: Equatable {
    /// IPv4 address (network byte order) and port: the connection pool's key.
    struct Endpoint: Hashable {
        var address: in_addr_t
        var port: UInt16
    }

    let endpoint: Endpoint
    let hostHeader: String
    let pathAndQuery: String

    /// Takes `url` apart; throws ``AFURLError/unsupportedURL(_:)`` for what the example cannot
    /// reach.
    init(_ url: URL) throws(AFURLError) {
        guard let parts = URLComponents(url: url, resolvingAgainstBaseURL: true),
              parts.scheme?.lowercased() == "http", let host = parts.host, !host.isEmpty
        else { throw .unsupportedURL(url.absoluteString) }
        var address = in_addr()
        if host.lowercased() == "localhost" {
            address.s_addr = UInt32(0x7F00_0001).bigEndian
        } else if inet_pton(AF_INET, host, &address) != 1 {
            throw .unsupportedURL(url.absoluteString)
        }
        let port = parts.port ?? 80
        guard (1...65535).contains(port) else { throw .unsupportedURL(url.absoluteString) }
        endpoint = Endpoint(address: address.s_addr, port: UInt16(port))
        hostHeader = parts.port == nil ? host : "\(host):\(port)"
        let path = parts.percentEncodedPath.isEmpty ? "/" : parts.percentEncodedPath
        pathAndQuery = parts.percentEncodedQuery.map { "\(path)?\($0)" } ?? path
    }

    /// The request's bytes: request line, fields, body.
    func serialize(_ request: AFURLRequest) -> [UInt8] {
        var head = "\(request.httpMethod) \(pathAndQuery) HTTP/1.1\r\nHost: \(hostHeader)\r\n"
        let written: Set<String> = ["host", "content-length", "connection"]
        for (name, value) in request.allHTTPHeaderFields.sorted(by: { $0.key < $1.key }) where !written.contains(name.lowercased()) {
            head += "\(name): \(value)\r\n"
        }
        if !request.httpBody.isEmpty || ["POST", "PUT", "PATCH"].contains(request.httpMethod.uppercased()) {
            head += "Content-Length: \(request.httpBody.count)\r\n"
        }
        head += "\r\n"
        return Array(head.utf8) + request.httpBody
    }
}
