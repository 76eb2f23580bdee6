import Foundation
import Glibc
import LongThreads

/// The client side of one request, the role NSURLConnection plays for AFURLConnectionOperation:
/// a non-blocking socket whose readiness reaches the network thread through descriptor sources,
/// so the thread sleeps while the request waits. Made, used and ended on the network thread only.
///
/// ## Life story
/// 1. ``start()``: takes a kept-alive connection to the server from the pool, or connects anew.
/// 2. Sends the request as the socket takes it, then feeds what arrives to an
///    ``AFHTTPResponseParser`` until the response is complete: by its length, its last chunk, or
///    the server closing.
/// 3. The socket goes back to the pool if the response left it reusable; otherwise it is closed.
/// 4. A redirect starts again at 1 with the next request (up to `maximumRedirects`); anything
///    else finishes, once, with the response or an error. ``cancel()`` and the timeout finish too.
final class AFURLConnection: @unchecked Sendable {
    // `@unchecked Sendable`: every mutable field is used on the network thread only, where the
    // source and timer handlers that capture `self` run.

    // MARK: Immutable
    private let thread: LongThread
    private let pool: AFConnectionPool
    private let modes: [RunLoop.Mode]
    /// Called once, on the network thread, with the outcome.
    private let didFinish: (Result<AFHTTPResponse, AFURLError>) -> Void

    // MARK: Network thread only
    /// The request being sent: the caller's, or the last redirect's.
    private var request: AFURLRequest
    private var target: AFRequestTarget?
    private var redirects = 0
    private var fd: Int32 = -1
    /// Whether `fd` came from the pool: a server may close an idle connection just as a request
    /// goes out, and then the request is sent again on a new one.
    private var reused = false
    private var connected = false
    private var source: DescriptorSource?
    private var unsent: ArraySlice<UInt8> = []
    private var parser = AFHTTPResponseParser()
    /// One read buffer for the whole request; the parser copies body bytes out of it once.
    private var readBuffer: [UInt8] = []
    private var timeout: LongThreadTimer?
    /// On the thread's clock (`LongThread.now`), which its timeout timer follows too.
    private var lastProgress: ContinuousClock.Instant
    private var finished = false

    init(request: AFURLRequest, thread: LongThread, pool: AFConnectionPool, modes: [RunLoop.Mode],
         didFinish: @escaping (Result<AFHTTPResponse, AFURLError>) -> Void) {
        self.request = request
        self.thread = thread
        self.pool = pool
        self.modes = modes
        self.didFinish = didFinish
        self.lastProgress = thread.now
    }

    /// `-[NSURLConnection start]`.
    func start() {
        lastProgress = thread.now
        armTimeout(after: request.timeoutInterval)
        send(reusing: true)
    }

    /// `-[NSURLConnection cancel]`: ends the request now, if it has not ended yet.
    func cancel() {
        finish(.failure(.cancelled))
    }

    // MARK: - Sending

    /// Sends `request` on a kept-alive connection if allowed and one is idle, else on a new one.
    private func send(reusing: Bool) {
        let target: AFRequestTarget
        do { target = try AFRequestTarget(request.url) } catch { return finish(.failure(error)) }
        self.target = target
        parser = AFHTTPResponseParser(method: request.httpMethod)
        unsent = target.serialize(request)[...]
        // Only a request that may be sent twice goes on a kept-alive connection (RFC 9112 9.3.1).
        if reusing, request.isIdempotent, let pooled = pool.take(target.endpoint) {
            (fd, reused, connected) = (pooled, true, true)
            return watch(.writable) { [self] _ in writable() }
        }
        (reused, connected) = (false, false)
        fd = AFSocket.makeTCP()
        if fd < 0 { return finish(.failure(.cannotConnect(errno: errno))) }
        switch AFSocket.connect(fd, to: target.endpoint) {
        case 0, EINPROGRESS:
            // Connected (or connecting): the socket turns writable when the handshake is done,
            // or reports the refusal as an error.
            watch(.writable) { [self] _ in writable() }
        case let error:
            finish(.failure(.cannotConnect(errno: error)))
        }
    }

    private func writable() {
        if !connected {
            let error = AFSocket.pendingError(fd)
            if error != 0 { return finish(.failure(.cannotConnect(errno: error))) }
            connected = true
        }
        let n = AFSocket.send(fd, unsent)
        if n == -Int(EAGAIN) { return }
        if n < 0 { return connectionBroke(errno: Int32(-n)) }
        progressed()
        unsent = unsent.dropFirst(n)
        if unsent.isEmpty { watch(.readable) { [self] _ in readable() } }
    }

    // MARK: - Receiving

    private func readable() {
        if readBuffer.isEmpty { readBuffer = [UInt8](repeating: 0, count: 64 * 1024) }
        let n = readBuffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        if n < 0 {
            if errno == EAGAIN || errno == EINTR { return }
            return connectionBroke(errno: errno)
        }
        if n == 0 { return endOfStream() }
        progressed()
        let progress: AFHTTPResponseParser.Progress
        do {
            progress = try readBuffer.withUnsafeBufferPointer { buffer throws(AFHTTPResponseParser.Error) in
                try parser.parse(UnsafeBufferPointer(rebasing: buffer[..<n]))
            }
        } catch {
            return finish(.failure(.badServerResponse(error)))
        }
        guard case .complete(let response, let consumed) = progress else { return }
        // Bytes after the response were not asked for: the connection is out of step.
        received(response, reusable: parser.canReuseConnection && consumed == n)
    }

    /// The server closed: the end of a body that runs to the close, or a broken response.
    private func endOfStream() {
        if reused, !parser.hasReceivedBytes { return sendAgain() }
        do {
            received(try parser.finish(), reusable: false)
        } catch {
            finish(.failure(.badServerResponse(error)))
        }
    }

    private func connectionBroke(errno error: Int32) {
        if reused, !parser.hasReceivedBytes { return sendAgain() }
        finish(.failure(.networkConnectionLost(errno: error)))
    }

    /// The kept-alive connection was closed by the server before it answered: send the request
    /// again, on a new connection.
    private func sendAgain() {
        releaseSocket(keep: false)
        send(reusing: false)
    }

    /// A whole response: follow it if it redirects, else finish with it.
    private func received(_ response: AFHTTPResponse, reusable: Bool) {
        var response = response
        response.url = request.url
        releaseSocket(keep: reusable)
        guard let next = request.redirected(by: response) else { return finish(.success(response)) }
        guard redirects < request.maximumRedirects else { return finish(.failure(.tooManyRedirects)) }
        redirects += 1
        request = next
        send(reusing: true)
    }

    // MARK: - Plumbing

    private func watch(_ events: DescriptorEvents, _ handler: @escaping @Sendable (DescriptorEvents) -> Void) {
        source?.cancel()
        do {
            source = try thread.watch(fd, for: events, modes: modes, handler)
        } catch {
            finish(.failure(.networkConnectionLost(errno: EBADF)))
        }
    }

    private func progressed() {
        lastProgress = thread.now
    }

    /// NSURLRequest's timeout is an idle timeout: one timer, which on firing checks whether
    /// anything happened since and, if so, waits for the rest (no re-arming per read).
    private func armTimeout(after delay: Duration) {
        timeout = try? thread.perform(after: delay, modes: modes) { [self] in
            guard !finished else { return }
            let idle = thread.now - lastProgress
            if idle >= request.timeoutInterval { return finish(.failure(.timedOut)) }
            armTimeout(after: request.timeoutInterval - idle)
        }
    }

    /// Hands the socket to the pool, or closes it; its source is cancelled first either way.
    private func releaseSocket(keep: Bool) {
        source?.cancel()
        source = nil
        guard fd >= 0 else { return }
        if keep, let target { pool.put(fd, for: target.endpoint, modes: modes) } else { close(fd) }
        fd = -1
    }

    /// Ends the request once.
    private func finish(_ result: Result<AFHTTPResponse, AFURLError>) {
        guard !finished else { return }
        finished = true
        timeout?.cancel()
        timeout = nil
        releaseSocket(keep: false)
        didFinish(result)
    }
}
