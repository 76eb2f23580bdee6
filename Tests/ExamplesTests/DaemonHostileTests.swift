import DaemonExample
import Foundation
import Testing

/// Clients that fill the daemon's socket buffers: every reply reaches a client that reads only
/// after sending everything, or reads slowly while it sends, during normal running and across a
/// SIGTERM (issue 33). The daemon used to strand the replies once a client's socket was full.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct DaemonHostileTests {
    static let requests = 100_000

    /// "after": the client sends 100,000 PINGs, and only then reads; "slow": it reads at about
    /// 2 MB/s while it sends them.
    @Test("a client that reads only after sending 100,000 PINGs, or slowly while sending them, gets every reply",
          arguments: ["after", "slow"])
    func everyReply(readingMode: String) throws {
        let daemon = try DaemonProcess(directory: DaemonProcess.makeDirectory())
        defer { daemon.cleanUp() }
        #expect(daemon.waitForLine(containing: "ready"))
        let peer = try DaemonPeer(DaemonPeer.pipeline, [daemon.socketPath, "\(Self.requests)", "PING", readingMode])
        defer { peer.cleanUp() }
        #expect(peer.waitForLine(containing: "replies", timeout: 60) == "replies \(Self.requests) ok \(Self.requests)", "\(peer.output.lines)")
        daemon.signal(SIGTERM)
        #expect(daemon.waitForExit() == 0)
    }

    @Test("SIGTERM while a client that read nothing yet is owed its replies: it gets one for every record stored, exit 0")
    func sigtermWhileOwed() throws {
        let daemon = try DaemonProcess(directory: DaemonProcess.makeDirectory())
        defer { daemon.cleanUp() }
        #expect(daemon.waitForLine(containing: "ready"))
        let peer = try DaemonPeer(DaemonPeer.pipeline, [daemon.socketPath, "\(Self.requests)", "APPEND r", "after", "0.5"])
        defer { peer.cleanUp() }
        #expect(peer.waitForLine(containing: "sent", timeout: 60) != nil)
        daemon.signal(SIGTERM) // before the client reads a byte
        try Self.expectEveryStoredRecordAnswered(daemon, peer)
    }

    @Test("SIGTERM while a slow client sends and reads: it gets one reply for every record stored, exit 0")
    func sigtermWhileReadingSlowly() throws {
        let daemon = try DaemonProcess(directory: DaemonProcess.makeDirectory())
        defer { daemon.cleanUp() }
        #expect(daemon.waitForLine(containing: "ready"))
        let peer = try DaemonPeer(DaemonPeer.pipeline, [daemon.socketPath, "\(Self.requests)", "APPEND r", "slow"])
        defer { peer.cleanUp() }
        #expect(peer.waitForLine(containing: "reading", timeout: 60) != nil)
        daemon.signal(SIGTERM)
        try Self.expectEveryStoredRecordAnswered(daemon, peer)
    }

    /// The daemon exits 0 within its shutdown deadline (5 s), and the client got an `OK` for
    /// each record in the journal: none stranded in the daemon.
    static func expectEveryStoredRecordAnswered(_ daemon: DaemonProcess, _ peer: DaemonPeer) throws {
        #expect(daemon.waitForExit(timeout: 8) == 0, "\(daemon.stderr)")
        let summary = try #require(peer.waitForLine(containing: "replies", timeout: 20), "\(peer.output.lines)")
        let records = try String(contentsOfFile: daemon.journalPath, encoding: .utf8).split(separator: "\n").count
        #expect(summary == "replies \(records) ok \(records)", "the journal holds \(records) records")
        #expect(records > 30_000, "more replies than one socket buffer holds: \(records)")
        #expect(!daemon.stderr.contains { $0.contains("shutdown deadline: cut") }, "\(daemon.stderr)")
    }
}
