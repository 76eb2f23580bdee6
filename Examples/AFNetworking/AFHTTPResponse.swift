import Foundation

/// A final HTTP response (interim `1xx` responses are skipped): AF's `NSHTTPURLResponse` and its
/// data in one value.
public struct AFHTTPResponse: Sendable, Equatable {
    /// The status code, such as 200 or 404.
    public var statusCode: Int
    /// The header fields, by lowercased name; a field sent several times has its values joined
    /// with `, `.
    public var headers: [String: String]
    /// The body, after any chunked framing is removed.
    public var body: [UInt8]
    /// The trailer fields sent after a chunked body, by lowercased name.
    public var trailers: [String: String]
    /// The URL that answered: the request's, or the last redirect's.
    public var url: URL?

    /// The body decoded as UTF-8.
    public var bodyText: String { String(decoding: body, as: UTF8.self) }

    init(statusCode: Int, headers: [String: String], body: [UInt8], trailers: [String: String] = [:], url: URL? = nil) {
        self.statusCode = statusCode
        self.headers = headers
        self.body = body
        self.trailers = trailers
        self.url = url
    }
}
