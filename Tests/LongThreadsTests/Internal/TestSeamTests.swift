import Foundation
@_spi(TestKit) @testable import LongThreads
import LongThreadsTestSupport
import Testing

/// LongThreadsTestKit enters the core through one seam (`TestSeam`, `ThreadCore+TestSeam.swift`),
/// and its waits are woken by the core's word, never by a clock.
@Suite("Test kit seam")
struct TestSeamTests {
    /// Where the core may name the test kit's harness: the files of its seam, the option that
    /// carries it, and the one line of `ThreadCore.init` that stores it as the seam.
    static let harnessAllowedIn = "Internal/Testing/"
    static let harnessAllowedLines: [(path: String, line: String)] = [
        ("Thread/LongThread+Options.swift", "@_spi(TestKit) public var harness: TestHarness?"),
        ("Internal/ThreadCore.swift", "self.testSeam = options.harness"),
    ]

    @Test("only the seam's files and ThreadCore.init name the harness")
    func oneSeam() throws {
        let sources = try WakeProtocolTests.coreSources()
        #expect(sources.count > 20, "read \(sources.count) source files: the path to Sources/LongThreads is wrong")
        // The word `harness` or `TestHarness`, not `Hints.harnessed` (the bit the core tests).
        // Simple word boundaries: Unicode's join `options.harness` into one word.
        let harness = try Regex(#"(?i)\b(test)?harness\b"#).wordBoundaryKind(.simple)
        var offending: [String] = []
        for (path, code) in sources where !path.hasPrefix(Self.harnessAllowedIn) {
            for line in code.split(separator: "\n") where line.contains(harness) {
                let trimmed = line.trimmingCharacters(in: .whitespaces)
                if !Self.harnessAllowedLines.contains(where: { $0.path == path && $0.line == trimmed }) {
                    offending.append("\(path): \(trimmed)")
                }
            }
        }
        #expect(offending.isEmpty, "the core reaches the test kit outside its seam (TestSeam): \(offending)")
        // Each allowed line is still there (a renamed one would leave the check above vacuous).
        for (path, line) in Self.harnessAllowedLines {
            let code = try #require(sources.first { $0.path == path }).code
            #expect(code.contains(line), "\(path) no longer holds `\(line)`: update harnessAllowedLines")
        }
    }

    /// What reads the core's own state: in the test kit's files, only its side of the seam may.
    static let coreStateReads = ["shared.", "withLockWaking", "SharedState", "hints.", "loop.", "options."]

    @Test("the test kit reads the core only through ThreadCore+TestSeam.swift")
    func kitReadsThroughTheSeam() throws {
        let kit = try WakeProtocolTests.coreSources().filter {
            $0.path.hasPrefix(Self.harnessAllowedIn) && $0.path != "Internal/Testing/ThreadCore+TestSeam.swift"
        }
        #expect(kit.count >= 3, "read \(kit.map(\.path)): the test kit's files moved")
        for (path, code) in kit {
            let reads = Self.coreStateReads.filter { code.contains($0) }
            #expect(reads.isEmpty, "\(path) reads the core's \(reads): ask through ThreadCore+TestSeam.swift")
        }
    }

    /// A 50 ms item: a harness polling every 200 µs woke 176 times (at most 250) while
    /// `runUntilIdle` waited for it; woken by the loop, once (the pass's end).
    @Test("runUntilIdle sleeps until the loop tells it, not on a clock")
    func waitsWithoutPolling() throws {
        let harness = TestHarness(clock: VirtualClock(), paused: false)
        var options = LongThread.Options()
        options.harness = harness
        let thread = try LongThread(name: "seam-no-poll", options: options)
        defer { thread.stop() }
        let started = Latch()
        try thread.perform {
            started.countDown()
            Thread.sleep(forTimeInterval: 0.05) // the work under test: an item that takes 50 ms
        }
        #expect(started.wait())
        let before = harness.wakeUpsForTesting
        try harness.runUntilIdle()
        let wakeUps = harness.wakeUpsForTesting - before
        #expect(wakeUps < 20, "the harness woke \(wakeUps) times while a 50 ms item ran: it polls")
    }
}
