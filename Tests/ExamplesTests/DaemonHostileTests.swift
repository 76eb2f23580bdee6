import DaemonExample
import Foundation
import Testing

/// Clients that fill the daemon's socket buffers: every reply reaches a client that reads only
/// after sending everything, or reads slowly while it sends, during normal running and across a
/// SIGTERM. The hazard: replies stranded in the daemon once a client's socket is full.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct DaemonHostileTests {
    static let requests = 100_000

    /// "after": the client sends 100,000 APPENDs, waits until the journal answered them all,
    /// and only then reads; "slow": it reads at about 400 kB/s while it sends them.
    @Test("a client that reads only after sending 100,000 requests, or slowly while sending them, gets every reply",
          arguments: ["after", "slow"])
    func everyReply(readingMode: String) throws {
        let daemon = try DaemonProcess(directory: DaemonProcess.makeDirectory())
        defer { daemon.cleanUp() }
        #expect(daemon.waitForLine(containing: "ready"))
        let peer = try DaemonPeer(DaemonPeer.pipeline, [daemon.socketPath, "\(Self.requests)", "APPEND r", readingMode, daemon.journalPath])
        defer { peer.cleanUp() }
        #expect(peer.waitForLine(containing: "replies", timeout: 90) == "replies \(Self.requests) ok \(Self.requests)", "\(peer.output.lines)")
        daemon.signal(SIGTERM)
        #expect(daemon.waitForExit() == 0)
    }

    @Test("SIGTERM while a client that read nothing yet is owed every reply: it gets one for every record stored, exit 0")
    func sigtermWhileOwed() throws {
        let daemon = try DaemonProcess(directory: DaemonProcess.makeDirectory())
        defer { daemon.cleanUp() }
        #expect(daemon.waitForLine(containing: "ready"))
        let peer = try DaemonPeer(DaemonPeer.pipeline, [daemon.socketPath, "\(Self.requests)", "APPEND r", "after", daemon.journalPath])
        defer { peer.cleanUp() }
        #expect(peer.waitForLine(containing: "sent", timeout: 60) != nil)
        // Every request answered by the journal: the replies wait in daemon.io, most of them
        // unsent, as the client reads nothing yet.
        #expect(waitUntil(timeout: .seconds(60)) { Self.records(daemon) == Self.requests })
        Thread.sleep(forTimeInterval: 0.1) // the last replies reach daemon.io (not a condition: a margin)
        daemon.signal(SIGTERM)
        try Self.expectEveryStoredRecordAnswered(daemon, peer)
    }

    @Test("SIGTERM while a slow client sends and reads: it gets one reply for every record stored, exit 0")
    func sigtermWhileReadingSlowly() throws {
        let daemon = try DaemonProcess(directory: DaemonProcess.makeDirectory())
        defer { daemon.cleanUp() }
        #expect(daemon.waitForLine(containing: "ready"))
        let peer = try DaemonPeer(DaemonPeer.pipeline, [daemon.socketPath, "\(Self.requests)", "APPEND r", "slow", daemon.journalPath])
        defer { peer.cleanUp() }
        // Every request answered by the journal while the client has read part of the replies.
        #expect(peer.waitForLine(containing: "answered", timeout: 60) != nil, "\(peer.output.lines)")
        Thread.sleep(forTimeInterval: 0.1) // the last replies reach daemon.io (not a condition: a margin)
        daemon.signal(SIGTERM)
        try Self.expectEveryStoredRecordAnswered(daemon, peer)
    }

    static func records(_ daemon: DaemonProcess) -> Int {
        ((try? Data(contentsOf: URL(fileURLWithPath: daemon.journalPath))) ?? Data()).lazy.filter { $0 == UInt8(ascii: "\n") }.count
    }

    /// The daemon exits 0 within its shutdown deadline (5 s), and the client got an `OK` for
    /// each record in the journal: none stranded in the daemon.
    static func expectEveryStoredRecordAnswered(_ daemon: DaemonProcess, _ peer: DaemonPeer) throws {
        #expect(daemon.waitForExit(timeout: 10) == 0, "\(daemon.stderr)")
        let summary = try #require(peer.waitForLine(containing: "replies", timeout: 20), "\(peer.output.lines)")
        let records = Self.records(daemon)
        #expect(summary == "replies \(records) ok \(records)", "the journal holds \(records) records")
        #expect(records > 30_000, "more replies than one socket buffer holds: \(records)")
        #expect(!daemon.stderr.contains { $0.contains("shutdown deadline: cut") }, "\(daemon.stderr)")
    }
}
