import AFNetworkingExample
import Dispatch
import ExampleSupport
import Foundation
import Glibc
import LongThreads
import LongThreadsTestKit
import Testing

/// The client's timeouts on virtual time (LongThreadsTestKit): a 30-second timeout in milliseconds.
@Suite(.timeLimit(.minutes(1)))
struct AFVirtualTimeoutTests {
    @Test("a request that gets no answer times out after its 30-second timeoutInterval, not before, in real milliseconds")
    func thirtySecondTimeout() throws {
        let started = ContinuousClock.now
        let server = try SilentServer()
        defer { server.close() }
        let test = try TestThread(name: "AF-test")
        defer { test.thread.stop() }
        var request = AFURLRequest(port: server.port, path: "/never")
        request.timeoutInterval = .seconds(30)
        let operation = AFURLConnectionOperation(request: request, thread: test.thread)
        let finished = DispatchSemaphore(value: 0)
        operation.setCompletionBlock { _ in finished.signal() }
        operation.start()
        // The whole request arrived: the client's last progress is at virtual time 0.
        try server.readRequest()
        // The client's last write may still be returning on the thread: a barrier behind it.
        try test.thread.sync {}
        #expect(test.nextDeadline == test.clock.now + .seconds(30))
        try test.advance(by: .seconds(29))
        #expect(operation.state != .finished)
        try test.advance(by: .seconds(1))
        #expect(finished.wait(timeout: .now() + 10) == .success)
        #expect(operation.result == .failure(.timedOut))
        #expect(ContinuousClock.now - started < .seconds(5), "virtual seconds, real milliseconds")
    }
}

/// A loopback server that accepts one connection, reads the request, and never answers.
private final class SilentServer {
    let port: UInt16
    private let listener: Int32
    private var client: Int32 = -1

    init() throws {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        self.listener = listener
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(listener, pointer, length) == 0 && listen(listener, 4) == 0
                    && getsockname(listener, pointer, &length) == 0
            }
        }
        guard bound else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
        port = UInt16(bigEndian: address.sin_port)
    }

    /// Accepts the client and reads until the end of its request's head (bounded by 10 s).
    func readRequest() throws {
        var ready = pollfd(fd: listener, events: Int16(POLLIN), revents: 0)
        guard poll(&ready, 1, 10_000) == 1 else { throw POSIXError(.ETIMEDOUT) }
        client = accept(listener, nil, nil)
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while !received.ends(with: Array("\r\n\r\n".utf8)) {
            var readable = pollfd(fd: client, events: Int16(POLLIN), revents: 0)
            guard poll(&readable, 1, 10_000) == 1 else { throw POSIXError(.ETIMEDOUT) }
            let count = read(client, &buffer, buffer.count)
            guard count > 0 else { throw POSIXError(.ECONNRESET) }
            received += buffer[..<count]
        }
    }

    func close() {
        if client >= 0 { Glibc.close(client) }
        Glibc.close(listener)
    }
}

private extension Array where Element == UInt8 {
    func ends(with suffix: [UInt8]) -> Bool { count >= suffix.count && Array(self[(count - suffix.count)...]) == suffix }
}
