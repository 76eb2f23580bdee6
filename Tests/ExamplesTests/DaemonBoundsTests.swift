import DaemonExample
import Foundation
import Testing

/// The bounds `longthread-daemon` puts on each client, tested with real clients (python3
/// scripts, see ``DaemonPeer``): no client can make it queue replies without limit, hold a
/// connection open forever, or hold up its shutdown.
@Suite(.serialized, .timeLimit(.minutes(1)))
struct DaemonBoundsTests {
    @Test("a client that never reads is not read past the reply buffer (the high watermark), and is cut after --send-timeout, saying so; others are served")
    func replyBufferLimit() throws {
        let daemon = try DaemonProcess(
            directory: DaemonProcess.makeDirectory(), options: ["--max-reply-buffer", "65536", "--send-timeout", "1"])
        defer { daemon.cleanUp() }
        #expect(daemon.waitForLine(containing: "ready"))

        // 10 000 requests of 2 bytes: about 570 kB of replies, far past 64 kB plus the kernel's buffer.
        let peer = try DaemonPeer(DaemonPeer.neverReads, [daemon.socketPath, "10000", "15"])
        defer { peer.cleanUp() }
        let backedUp = try #require(peer.output.waitForLine(containing: "backed up", timeout: 15))
        let cut = try #require(peer.output.waitForLine(containing: "cut", timeout: 15))
        #expect(cut.text == "cut")
        #expect(cut.at - backedUp.at >= .milliseconds(800), "cut \(cut.at - backedUp.at) after its replies backed up")
        #expect(daemon.waitForLine(containing: "client cut: it took none of its replies within the send timeout"), "\(daemon.stderr)")

        let client = try DaemonClient(path: daemon.socketPath)
        #expect(try client.request("PING") == "OK PONG", "the daemon serves on")
        daemon.signal(SIGTERM)
        #expect(daemon.waitForExit() == 0)
    }

    @Test("an idle client is closed after the idle timeout; a client waiting for its reply is not")
    func idleTimeout() throws {
        let daemon = try DaemonProcess(
            directory: DaemonProcess.makeDirectory(),
            options: ["--idle-timeout", "0.5", "--debug-stall-requests"]
        )
        defer { daemon.cleanUp() }
        #expect(daemon.waitForLine(containing: "ready"))

        let idle = try DaemonPeer(DaemonPeer.idle, [daemon.socketPath, "20"])
        defer { idle.cleanUp() }
        #expect(idle.waitForLine(containing: "connected") != nil)
        // The journal is busy for 1.5 s, three idle timeouts: this client waits, it is not idle.
        let waiting = try DaemonClient(path: daemon.socketPath)
        #expect(try waiting.request("STALL 1500") == "OK STALLED 1500 ms")

        #expect(idle.waitForLine(containing: "closed")?.hasPrefix("closed after") == true)
        #expect(daemon.waitForLine(containing: "client closed: idle"))
        #expect(try waiting.readLine() == nil, "once answered and idle, it is closed too")

        daemon.signal(SIGTERM)
        #expect(daemon.waitForExit() == 0)
    }

    @Test("SIGTERM with five clients that never read: they are cut at the shutdown deadline, exit 0")
    func shutdownDeadline() throws {
        let daemon = try DaemonProcess(directory: DaemonProcess.makeDirectory(), options: ["--shutdown-timeout", "1"])
        defer { daemon.cleanUp() }
        #expect(daemon.waitForLine(containing: "ready"))

        // Each is owed about 570 kB of replies (under the 1 MiB buffer limit) and reads none.
        let peers = try (0..<5).map { _ in try DaemonPeer(DaemonPeer.neverReads, [daemon.socketPath, "10000", "50"]) }
        defer { peers.forEach { $0.cleanUp() } }
        for peer in peers { #expect(peer.waitForLine(containing: "backed up") != nil) }

        daemon.signal(SIGTERM)
        // A deadline of 1 s for all clients together, not 2 s per client (10 s for these five).
        #expect(daemon.waitForExit(timeout: 8) == 0, "\(daemon.stderr)")
        #expect(daemon.stderr.contains { $0.contains("shutdown deadline: cut") && $0.contains("clients=5") }, "\(daemon.stderr)")
        for peer in peers { #expect(peer.waitForLine(containing: "cut") == "cut") }
    }

    @Test("an ERR reply escapes the control characters it echoes")
    func errorEchoIsEscaped() throws {
        let daemon = try DaemonProcess(directory: DaemonProcess.makeDirectory())
        defer { daemon.cleanUp() }
        #expect(daemon.waitForLine(containing: "ready"))

        let peer = try DaemonPeer(DaemonPeer.exchange, [daemon.socketPath, #"b"FR\rOB\nX\x1b[2J\nPING\r\n""#, "3"])
        defer { peer.cleanUp() }
        let expected = [
            #"reply 'ERR unknown command "FR\\rOB" (expected APPEND <text>, COUNT or PING)\n'"#,
            #"reply 'ERR unknown command "X\\u{1B}[2J" (expected APPEND <text>, COUNT or PING)\n'"#,
            #"reply 'OK PONG\n'"#,
        ]
        #expect(peer.waitForLine(containing: "OK PONG") != nil)
        #expect(peer.output.lines == expected)

        daemon.signal(SIGTERM)
        #expect(daemon.waitForExit() == 0)
    }
}
