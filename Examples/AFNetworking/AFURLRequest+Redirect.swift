import Foundation

extension AFURLRequest {
    /// Methods a client may send twice (RFC 9110 9.2.2), so may retry on a new connection.
    var isIdempotent: Bool {
        ["GET", "HEAD", "OPTIONS", "TRACE", "PUT", "DELETE"].contains(httpMethod.uppercased())
    }

    /// The request `response` redirects to, or nil if it is not a redirect to follow.
    ///
    /// Followed: 301, 302, 303, 307 and 308 with a `Location` (absolute or relative to this
    /// request's URL). The method: 303 turns it into `GET` (except `HEAD`), 301 and 302 turn
    /// `POST` into `GET` (as browsers, curl and NSURLSession do), 307 and 308 keep method and body.
    /// Credentials are not sent to another host or port.
    func redirected(by response: AFHTTPResponse) -> AFURLRequest? {
        guard [301, 302, 303, 307, 308].contains(response.statusCode),
              let location = response.headers["location"], !location.isEmpty,
              let url = URL(string: location, relativeTo: url)?.absoluteURL
        else { return nil }
        var next = self
        next.url = url
        let method = httpMethod.uppercased()
        if (response.statusCode == 303 && method != "HEAD") || ([301, 302].contains(response.statusCode) && method == "POST") {
            next.httpMethod = "GET"
            next.httpBody = []
            next.allHTTPHeaderFields = allHTTPHeaderFields.filter { $0.key.lowercased() != "content-type" }
        }
        if url.host != self.url.host || url.port != self.url.port {
            next.allHTTPHeaderFields = next.allHTTPHeaderFields.filter { !["authorization", "cookie"].contains($0.key.lowercased()) }
        }
        return next
    }
}
