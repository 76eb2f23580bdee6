@testable import DaemonExample
import Foundation
import Glibc
import Logging
import LongThreads
import LongThreadsTestKit
import LongThreadsTestSupport
import Testing

/// The daemon's idle timeout in-process, on virtual time (LongThreadsTestKit): 30 seconds in
/// milliseconds. (`DaemonBoundsTests.idleTimeout` runs the daemon as a child process, on real time.)
@Suite(.timeLimit(.minutes(1)))
struct DaemonVirtualIdleTests {
    @Test("an idle client is closed once the 30-second idle timeout passes, not before, in real milliseconds")
    func thirtySecondIdleTimeout() throws {
        let started = ContinuousClock.now
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("lt-idle-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let journal = try Journal(path: directory.appendingPathComponent("journal").path)
        defer { journal.thread.stop() }
        let io = try TestThread(name: "daemon.io")
        defer { io.thread.stop(pending: .discard) }
        let limits = ClientLimits(idleTimeout: .seconds(30), replyBufferBytes: 1 << 20, shutdownDeadline: .seconds(5))
        let socketPath = directory.appendingPathComponent("sock").path
        let server = try SocketServer(path: socketPath, journal: journal, limits: limits, io: io.thread,
                                      logger: Logger(label: "test") { _ in SwiftLogNoOpLogHandler() })
        _ = server
        let client = try connectUnix(socketPath)
        defer { close(client) }
        // Accepted on daemon.io at virtual time 0 (the accept is a descriptor callout: a barrier after it).
        #expect(waitUntil { server.clientCount == 1 })
        try io.thread.sync {}
        try io.advance(by: .seconds(29))
        #expect(server.clientCount == 1)
        try io.advance(by: .seconds(1))
        #expect(server.clientCount == 0)
        var byte: UInt8 = 0
        #expect(read(client, &byte, 1) == 0, "the daemon closed the connection")
        #expect(ContinuousClock.now - started < .seconds(5), "virtual seconds, real milliseconds")
    }
}

/// A blocking client socket connected to the Unix socket at `path`.
private func connectUnix(_ path: String) throws -> Int32 {
    let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
    let connected = withUnixAddress(path) { connect(fd, $0, $1) }
    guard connected == 0 else {
        close(fd)
        throw POSIXError(.init(rawValue: errno) ?? .EIO)
    }
    return fd
}
