import Foundation

/// Why a request failed: the `NSURLError` codes AF's operations finish with.
public enum AFURLError: Error, Equatable, Sendable {
    /// The operation was cancelled before it finished (NSURLErrorCancelled).
    case cancelled
    /// The connection could not be made: `ECONNREFUSED` for a closed port (NSURLErrorCannotConnectToHost).
    case cannotConnect(errno: Int32)
    /// The connection broke while sending or receiving (NSURLErrorNetworkConnectionLost).
    case networkConnectionLost(errno: Int32)
    /// The server's bytes are not an HTTP/1.1 response, or stopped short of a whole one
    /// (NSURLErrorBadServerResponse); the parser's error says what was wrong.
    case badServerResponse(AFHTTPResponseParser.Error)
    /// No progress for the request's `timeoutInterval` (NSURLErrorTimedOut).
    case timedOut
    /// More redirects than the request's `maximumRedirects` (NSURLErrorHTTPTooManyRedirects).
    case tooManyRedirects
    /// A URL the example cannot reach: not `http`, or a host that is not an IPv4 address or
    /// `localhost` (NSURLErrorUnsupportedURL).
    case unsupportedURL(String)
}
