import DaemonExample
import Foundation
import Testing

/// The daemon's bounds in all: out of descriptors it waits instead of spinning, it
/// serves a bounded number of clients and queues a bounded number of reply bytes, and it gives
/// memory back once clients leave; an `ERR` echo is bounded in bytes.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct DaemonLimitsTests {
    @Test("out of descriptors, the daemon sleeps (little CPU), logs it once, and accepts again once clients leave")
    func outOfDescriptors() throws {
        let daemon = try DaemonProcess(directory: DaemonProcess.makeDirectory(), openFileLimit: 64)
        defer { daemon.cleanUp() }
        #expect(daemon.waitForLine(containing: "ready"), "\(daemon.stderr)")
        let crowd = try DaemonPeer(DaemonPeer.crowd, [daemon.socketPath, "100"])
        defer { crowd.cleanUp() }
        #expect(crowd.waitForLine(containing: "connected") == "connected 100")
        #expect(daemon.waitForLine(containing: "cannot accept clients: out of descriptors"), "\(daemon.stderr)")
        // Paused, it leaves its reserve free: Dispatch halts a process that cannot open one.
        // (A descriptor Dispatch or the library holds for a moment: wait, bounded.)
        let roomy = ContinuousClock.now + .seconds(5)
        while daemon.freeDescriptors(limit: 64) < 4, ContinuousClock.now < roomy { Thread.sleep(forTimeInterval: 0.01) }
        #expect(daemon.freeDescriptors(limit: 64) >= 4, "of 64 descriptors, free while paused")

        let before = try daemon.cpuTime
        let window = ContinuousClock.now
        Thread.sleep(forTimeInterval: 2) // the span measured, not a wait for a condition
        let used = try daemon.cpuTime - before
        let elapsed = ContinuousClock.now - window
        #expect(used < elapsed / 5, "the daemon used \(used) of CPU in \(elapsed) while out of descriptors")
        #expect(daemon.stderr.filter { $0.contains("cannot accept clients") }.count == 1, "logged once")

        crowd.cleanUp() // its 100 connections close
        let client = try DaemonClient(path: daemon.socketPath)
        #expect(try client.request("PING") == "OK PONG", "accepting again")
        daemon.signal(SIGTERM)
        #expect(daemon.waitForExit() == 0)
    }

    @Test("one client more than --max-clients is told why and closed; the others are served")
    func clientLimit() throws {
        let daemon = try DaemonProcess(directory: DaemonProcess.makeDirectory(), options: ["--max-clients", "2"])
        defer { daemon.cleanUp() }
        #expect(daemon.waitForLine(containing: "ready"))
        let first = try DaemonClient(path: daemon.socketPath)
        let second = try DaemonClient(path: daemon.socketPath)
        #expect(try first.request("PING") == "OK PONG")
        #expect(try second.request("PING") == "OK PONG")
        let third = try DaemonClient(path: daemon.socketPath)
        #expect(try third.readLine() == "ERR too many clients (limit 2); try again later")
        #expect(try third.readLine() == nil)
        #expect(daemon.waitForLine(containing: "client refused: too many clients"))
        #expect(try first.request("PING") == "OK PONG", "the first clients are served on")
        daemon.signal(SIGTERM)
        #expect(daemon.waitForExit() == 0)
    }

    @Test("clients that never read: at --max-total-reply-buffer the ones holding the most are cut; others are served")
    func totalReplyLimit() throws {
        let daemon = try DaemonProcess(
            directory: DaemonProcess.makeDirectory(),
            options: ["--max-reply-buffer", "10000000", "--max-total-reply-buffer", "500000"]
        )
        defer { daemon.cleanUp() }
        #expect(daemon.waitForLine(containing: "ready"))
        // Far under the limit per client, over the one for all.
        let peers = try (0..<3).map { _ in try DaemonPeer(DaemonPeer.floodNeverReads, [daemon.socketPath, "30"]) }
        defer { peers.forEach { $0.cleanUp() } }
        #expect(daemon.waitForLine(containing: "client cut: the memory held for all clients reached the total limit, and it held the most", timeout: 30), "\(daemon.stderr)")
        #expect(!daemon.stderr.contains { $0.contains("passed the reply buffer limit") }, "no client passed its own limit")
        let client = try DaemonClient(path: daemon.socketPath)
        #expect(try client.request("PING") == "OK PONG", "the daemon serves on")
        daemon.signal(SIGTERM)
        #expect(daemon.waitForExit() == 0)
    }

    @Test("memory taken by replies queued for 20 clients that never read is given back once they leave",
          .enabled(if: !runsUnderSanitizer, "a sanitizer's allocator keeps freed memory: malloc_trim returns none"))
    func memoryReturns() throws {
        let daemon = try DaemonProcess(
            directory: DaemonProcess.makeDirectory(),
            options: ["--max-reply-buffer", "4000000", "--max-total-reply-buffer", "100000000"]
        )
        defer { daemon.cleanUp() }
        #expect(daemon.waitForLine(containing: "ready"))
        let client = try DaemonClient(path: daemon.socketPath)
        #expect(try client.request("PING") == "OK PONG")
        let baseline = try daemon.residentBytes

        // Each sends 40,000 short lines and reads none of their 2.3 MB of replies: 46 MB in all.
        let peers = try (0..<20).map { _ in try DaemonPeer(DaemonPeer.neverReads, [daemon.socketPath, "40000", "60"]) }
        defer { peers.forEach { $0.cleanUp() } }
        #expect(waitUntil(timeout: .seconds(30)) { ((try? daemon.residentBytes) ?? 0) > baseline + 30_000_000 })
        let peak = try daemon.residentBytes
        peers.forEach { $0.cleanUp() }
        #expect(try client.request("PING") == "OK PONG")
        let returned = waitUntil(timeout: .seconds(10)) { ((try? daemon.residentBytes) ?? .max) < baseline + 10_000_000 }
        let after = try daemon.residentBytes
        #expect(returned, "resident \(after) bytes after the clients left; \(baseline) before, \(peak) at the peak")
        daemon.signal(SIGTERM)
        #expect(daemon.waitForExit() == 0)
    }

    @Test("an ERR reply's echo is cut by bytes, between scalars: a letter and 1,364 zero-width joiners earn a short reply")
    func errorEchoCutByBytes() throws {
        let daemon = try DaemonProcess(directory: DaemonProcess.makeDirectory())
        defer { daemon.cleanUp() }
        #expect(daemon.waitForLine(containing: "ready"))
        let client = try DaemonClient(path: daemon.socketPath)
        let joiners = "a" + String(repeating: "\u{200D}", count: 1364) // 4,093 bytes, one Character
        let reply = try #require(try client.request(joiners))
        #expect(reply.utf8.count <= 160, "\(reply.utf8.count) bytes: \(reply)")
        #expect(reply.hasPrefix(#"ERR unknown command "a\u{200D}\u{200D}"#), "\(reply)")
        // Two-byte scalars: cut between them, never inside one (no U+FFFD in the reply).
        let accents = try #require(try client.request(String(repeating: "é", count: 2000)))
        #expect(accents.contains(String(repeating: "é", count: 30) + "…\" (expected"), "\(accents)")
        #expect(!accents.unicodeScalars.contains("\u{FFFD}"))
        daemon.signal(SIGTERM)
        #expect(daemon.waitForExit() == 0)
    }
}

/// Whether this process (and so the daemon it built alongside) runs under ThreadSanitizer or
/// AddressSanitizer, whose allocators do not give freed memory back on `malloc_trim`.
let runsUnderSanitizer: Bool = ["__tsan_init", "__asan_init"].contains { (name: String) in
    dlsym(UnsafeMutableRawPointer(bitPattern: 0), name) != nil
}
