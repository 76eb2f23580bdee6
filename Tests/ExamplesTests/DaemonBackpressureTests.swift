import DaemonExample
import Foundation
import Testing

/// Backpressure and the bounds on memory and time, against hostile clients (python3 scripts,
/// see ``DaemonPeer``): a client that reads, however slowly, gets every reply; one that stops
/// reading is cut after the send timeout; memory is bounded where it is taken, per client and in
/// all, and at the total the clients holding the most are cut, never the one being read; a
/// request line must end in time; an endless line is cut. (A client that stops reading: `DaemonBoundsTests.replyBufferLimit`.) Each run is bounded to a few seconds
/// (CI runs them plain, under TSan and under ASan, on 2 cores).
@Suite(.serialized, .timeLimit(.minutes(2)))
struct DaemonBackpressureTests {
    // Backpressure as SwiftNIO's channels do it: `ChannelOptions.writeBufferWaterMark`, and
    // `NIOAsyncWriter`'s high and low watermarks (swift-nio, Sources/NIOCore).
    @Test("a client writing 100,000 PINGs while reading 2 KiB every 5 ms gets every reply past a 64 KiB high watermark")
    func slowReaderGetsEveryReply() throws {
        let daemon = try DaemonProcess(directory: DaemonProcess.makeDirectory(), options: ["--max-reply-buffer", "65536"])
        defer { daemon.cleanUp() }
        #expect(daemon.waitForLine(containing: "ready"))
        let peer = try DaemonPeer(DaemonPeer.pipeline, [daemon.socketPath, "100000", "PING", "slow"])
        defer { peer.cleanUp() }
        #expect(peer.waitForLine(containing: "replies", timeout: 60) == "replies 100000 ok 100000", "\(peer.output.lines)")
        #expect(!daemon.stderr.contains { $0.contains("client cut") }, "\(daemon.stderr)")
        daemon.signal(SIGTERM)
        #expect(daemon.waitForExit() == 0)
    }

    /// The figure README states is measured with this test and larger numbers:
    /// `LTD_HOGS=255 LTD_TOTAL=67108864 LTD_WATERMARK=1048576 swift test --skip-build --enable-all-traits --disable-xctest --filter nonReadersAtTheLimits`
    @Test("128 clients that write and never read: peak RSS stays within twice the total limit plus 16 MiB; an honest client is served")
    func nonReadersAtTheLimits() throws {
        let environment = ProcessInfo.processInfo.environment
        // A quarter of the load under a sanitizer (5 to 20 times slower), where RSS is not checked.
        let hogs = environment["LTD_HOGS"].flatMap(Int.init) ?? (runsUnderSanitizer ? 32 : 128)
        let total = environment["LTD_TOTAL"].flatMap(Int.init) ?? (runsUnderSanitizer ? 4 : 16) << 20
        let watermark = environment["LTD_WATERMARK"].flatMap(Int.init) ?? 256 << 10
        let daemon = try DaemonProcess(directory: DaemonProcess.makeDirectory(), options: [
            "--max-clients", "\(hogs + 1)", "--max-reply-buffer", "\(watermark)", "--max-total-reply-buffer", "\(total)",
        ])
        defer { daemon.cleanUp() }
        #expect(daemon.waitForLine(containing: "ready"))
        let client = try DaemonClient(path: daemon.socketPath)
        #expect(try client.request("PING") == "OK PONG")
        let baseline = try daemon.residentBytes

        // "X" lines: each 2-byte request owes a 60-byte ERR reply, the costliest to queue.
        let peer = try DaemonPeer(DaemonPeer.hogs, [daemon.socketPath, "\(hogs)", environment["LTD_LINE"] ?? "X"])
        defer { peer.cleanUp() }
        let stalled = try #require(peer.waitForLine(containing: "stalled", timeout: 60), "\(daemon.stderr.suffix(5))")
        #expect(try client.request("PING") == "OK PONG", "served while the others press")
        let peak = try daemon.peakResidentBytes
        print("nonReadersAtTheLimits: \(hogs) clients, total \(total), watermark \(watermark): \(stalled); RSS \(baseline >> 10) KiB idle, peak \(peak >> 10) KiB (+\((peak - baseline) >> 20) MiB)")
        if !runsUnderSanitizer { // a sanitizer's allocator keeps freed memory in quarantine
            #expect(peak - baseline <= 2 * total + 16 << 20, "peak \(peak), idle \(baseline)")
        }
        daemon.signal(SIGTERM)
        #expect(daemon.waitForExit(timeout: 15) == 0)
    }

    @Test("at the total limit the clients holding the most are cut, never the client being read: an honest pipeliner gets every reply")
    func honestReaderAmongHogs() throws {
        let daemon = try DaemonProcess(directory: DaemonProcess.makeDirectory(), options: [
            "--max-reply-buffer", "10000000", "--max-total-reply-buffer", "2000000",
        ])
        defer { daemon.cleanUp() }
        #expect(daemon.waitForLine(containing: "ready"))
        let hogs = try DaemonPeer(DaemonPeer.hogs, [daemon.socketPath, "30", "X"])
        defer { hogs.cleanUp() }
        #expect(hogs.waitForLine(containing: "stalled", timeout: 60) != nil)
        let honest = try DaemonPeer(DaemonPeer.pipeline, [daemon.socketPath, "20000", "PING", "slow"])
        defer { honest.cleanUp() }
        #expect(honest.waitForLine(containing: "replies", timeout: 60) == "replies 20000 ok 20000", "\(honest.output.lines)")
        #expect(daemon.stderr.contains { $0.contains("client cut: the memory held for all clients reached the total limit") },
                "\(daemon.stderr.suffix(5))")
        daemon.signal(SIGTERM)
        #expect(daemon.waitForExit(timeout: 15) == 0)
    }

    @Test("slowloris: 8 clients trickling a byte each 0.2 s hold every slot; a line must end within --request-timeout, so a real client is served soon after")
    func slowloris() throws {
        let daemon = try DaemonProcess(directory: DaemonProcess.makeDirectory(), options: [
            "--max-clients", "8", "--request-timeout", "1", "--idle-timeout", "30",
        ])
        defer { daemon.cleanUp() }
        #expect(daemon.waitForLine(containing: "ready"))
        let tricklers = try DaemonPeer(DaemonPeer.slowloris, [daemon.socketPath, "8", "8"])
        defer { tricklers.cleanUp() }
        #expect(tricklers.waitForLine(containing: "connected") != nil)
        // The slots are full once a client is refused (told so, or closed before its request went out).
        var refused = false
        let probing = ContinuousClock.now
        while !refused, ContinuousClock.now - probing < .seconds(5) { refused = Self.isRefused(daemon.socketPath) }
        #expect(refused, "the tricklers never held every slot")
        let start = ContinuousClock.now
        var served = false
        while !served, ContinuousClock.now - start < .seconds(6) {
            served = (try? DaemonClient(path: daemon.socketPath).request("PING")) == "OK PONG"
            if !served { Thread.sleep(forTimeInterval: 0.05) } // a client's retry pace, not a wait for a condition
        }
        let waited = ContinuousClock.now - start
        #expect(served && waited < .milliseconds(3500), "served: \(served) after \(waited), request timeout 1 s")
        #expect(daemon.stderr.contains { $0.contains("client cut: a request line did not end within the request timeout") })
        daemon.signal(SIGTERM)
        #expect(daemon.waitForExit() == 0)
    }

    /// Whether the daemon refuses a new client: says so, or closes before the request went out.
    static func isRefused(_ path: String) -> Bool {
        guard let client = try? DaemonClient(path: path) else { return false }
        do {
            return try client.request("PING")?.hasPrefix("ERR too many clients") == true
        } catch {
            return error == .system("send", errno: EPIPE)
        }
    }

    @Test("an endless line is answered ERR too long and cut after 64 KiB more, without spinning a core on it")
    func endlessLine() throws {
        let daemon = try DaemonProcess(directory: DaemonProcess.makeDirectory())
        defer { daemon.cleanUp() }
        #expect(daemon.waitForLine(containing: "ready"))
        let before = try daemon.cpuTime
        let peer = try DaemonPeer(DaemonPeer.endlessLine, [daemon.socketPath, "5"])
        defer { peer.cleanUp() }
        let line = try #require(peer.waitForLine(containing: " after ", timeout: 15))
        #expect(line.hasPrefix("closed after"), "\(line)")
        let sent = Int(line.split(separator: " ").last ?? "") ?? .max
        #expect(sent < 4 << 20, "the daemon took \(sent) bytes of one line")
        #expect(peer.waitForLine(containing: "replies")?.contains("ERR request longer than 4096 bytes") == true, "\(peer.output.lines)")
        #expect(daemon.waitForLine(containing: "client cut: a request line ran on without a newline"))
        #expect(try daemon.cpuTime - before < .seconds(1), "CPU used on the endless line")
        daemon.signal(SIGTERM)
        #expect(daemon.waitForExit() == 0)
    }

    @Test("with the journal stalled, a client that reads a little is taken in for at most 4 batches")
    func batchesInFlightBound() throws {
        let daemon = try DaemonProcess(
            directory: DaemonProcess.makeDirectory(), options: ["--debug-stall-requests", "--log-level", "trace"])
        defer { daemon.cleanUp() }
        #expect(daemon.waitForLine(containing: "ready"))
        let peer = try DaemonPeer(DaemonPeer.stalledJournal, [daemon.socketPath])
        defer { peer.cleanUp() }
        #expect(peer.waitForLine(containing: "done") != nil)
        let inFlight = daemon.stderr.compactMap { line -> Int? in
            guard let range = line.range(of: "batches.in.flight=") else { return nil }
            return Int(line[range.upperBound...].prefix { $0.isNumber })
        }
        #expect(!inFlight.isEmpty, "no batch logged")
        #expect((inFlight.max() ?? .max) <= 4, "at most \(inFlight.max() ?? -1) batches in flight")
        daemon.signal(SIGTERM)
        #expect(daemon.waitForExit() == 0)
    }

    /// Hang-up is reported whatever a descriptor source waits for, and for as long as the socket
    /// stays open (level-triggered): a client that hangs up while the daemon may not read it (its
    /// batches wait on a stalled journal) must not make daemon.io spin until they come back.
    @Test("a client that hangs up while its batches wait costs no CPU meanwhile, and what it sent is still stored")
    func hangUpWhileHeld() throws {
        let stall = 2000, appends = 3000
        let daemon = try DaemonProcess(directory: DaemonProcess.makeDirectory(), options: ["--debug-stall-requests"])
        defer { daemon.cleanUp() }
        #expect(daemon.waitForLine(containing: "ready"))
        let peer = try DaemonPeer(DaemonPeer.hangUpWhileHeld, [daemon.socketPath, "\(stall)", "\(appends)"])
        defer { peer.cleanUp() }
        #expect(peer.waitForLine(containing: "closed") != nil)
        let before = try daemon.cpuTime
        let deadline = ContinuousClock.now + .seconds(30)
        // Lines counted with read(2): Foundation's String(contentsOfFile:) leaks its buffer when the
        // file grows while it reads it (LeakSanitizer), as the journal does here.
        func stored() -> Int {
            let fd = open(daemon.journalPath, O_RDONLY)
            guard fd >= 0 else { return 0 }
            defer { close(fd) }
            var lines = 0
            var buffer = [UInt8](repeating: 0, count: 65536)
            while case let n = read(fd, &buffer, buffer.count), n > 0 {
                lines += buffer[..<n].count { $0 == UInt8(ascii: "\n") }
            }
            return lines
        }
        while stored() < appends, ContinuousClock.now < deadline { usleep(20_000) }
        let used = try daemon.cpuTime - before
        #expect(stored() == appends)
        // A spin takes the whole stall in CPU; storing 3,000 records takes a small part of it.
        #expect(used < .milliseconds(stall / 2), "daemon used \(used) of CPU over a \(stall) ms stall")
        daemon.signal(SIGTERM)
        #expect(daemon.waitForExit() == 0)
    }

    @Test("commands match ASCII letters case-insensitively only; records refuse U+2028, U+2029, U+202E, keep emoji joiners")
    func asciiCommandsAndUnicodeControls() throws {
        let daemon = try DaemonProcess(directory: DaemonProcess.makeDirectory())
        defer { daemon.cleanUp() }
        #expect(daemon.waitForLine(containing: "ready"))
        let client = try DaemonClient(path: daemon.socketPath)
        #expect(try client.request("PiNg") == "OK PONG")
        #expect(try client.request("p\u{131}ng") == #"ERR unknown command "p\#u{131}ng" (expected APPEND <text>, COUNT or PING)"#)
        #expect(try client.request("\u{212A}OUNT")?.hasPrefix("ERR unknown command") == true, "the Kelvin sign is not K")
        let refused = "ERR control characters (tabs included) are not allowed in a record"
        for scalar in ["\u{2028}", "\u{2029}", "\u{202E}", "\u{200B}", "\u{FEFF}"] {
            #expect(try client.request("APPEND a\(scalar)b") == refused, "U+\(String(scalar.unicodeScalars.first!.value, radix: 16))")
        }
        #expect(try client.request("APPEND \u{1F468}\u{200D}\u{1F469}\u{200D}\u{1F467}") == "OK 1")
        daemon.signal(SIGTERM)
        #expect(daemon.waitForExit() == 0)
        #expect(try String(contentsOfFile: daemon.journalPath, encoding: .utf8) == "1\t\u{1F468}\u{200D}\u{1F469}\u{200D}\u{1F467}\n")
    }

    @Test("SIGTERM while a slow client is held back by the watermark: it gets one reply for every record stored, exit 0")
    func sigtermWhileBackpressured() throws {
        let daemon = try DaemonProcess(directory: DaemonProcess.makeDirectory(), options: ["--max-reply-buffer", "65536"])
        defer { daemon.cleanUp() }
        #expect(daemon.waitForLine(containing: "ready"))
        let peer = try DaemonPeer(DaemonPeer.pipeline, [daemon.socketPath, "100000", "APPEND r", "slow", daemon.journalPath])
        defer { peer.cleanUp() }
        #expect(peer.waitForLine(containing: "reading", timeout: 60) != nil, "\(peer.output.lines)")
        daemon.signal(SIGTERM)
        try DaemonHostileTests.expectEveryStoredRecordAnswered(daemon, peer)
    }
}
