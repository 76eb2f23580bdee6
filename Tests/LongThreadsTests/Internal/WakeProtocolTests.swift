import Foundation
@testable import LongThreads
import LongThreadsTestSupport
import Testing

/// The loop is woken through one waker (`Waker`, `ThreadCore.withLockWaking`): whoever must wake it
/// decides under the lock and rings after. A place that repeated the protocol by hand and forgot
/// the ring left a parked loop asleep (a minute in these tests) until something else rang it.
@Suite("One waker")
struct WakeProtocolTests {
    /// The raw ways to wake the loop, and the only file of `Sources/LongThreads` that may use each.
    static let rawRings: [(primitive: String, allowedIn: String)] = [
        (".unpark()", "Internal/Post/Waker.swift"),
        ("parkBell", "Internal/Post/Waker.swift"),
        (".wake()", "Internal/Post/Waker.swift"),
        ("CFRunLoopWakeUp(", "Engine/RunLoopEngine.swift"),
        ("CLongThreadsShims_eventfdSignal(", "Engine/RunLoopEngine.swift"),
        ("CFRunLoopSourceSignal(", "Engine/RunLoopEngine.swift"),
        ("CLongThreadsShims_doorbellRing(", "Internal/Wait/Doorbell.swift"),
    ]

    /// Each Swift file of the core, by its path under `Sources/LongThreads`, without comment lines.
    static func coreSources() throws -> [(path: String, code: String)] {
        // The package's root: the first folder above this file that holds Package.swift.
        var package = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        while package.path != "/",
              !FileManager.default.fileExists(atPath: package.appendingPathComponent("Package.swift").path) {
            package.deleteLastPathComponent()
        }
        let root = package.appendingPathComponent("Sources/LongThreads")
        let paths = try FileManager.default.subpathsOfDirectory(atPath: root.path).filter { $0.hasSuffix(".swift") }
        return try paths.sorted().map { path in
            let text = try String(contentsOf: root.appendingPathComponent(path), encoding: .utf8)
            let code = text.split(separator: "\n", omittingEmptySubsequences: false)
                .filter { !$0.drop { $0 == " " }.hasPrefix("//") }
                .joined(separator: "\n")
            return (path, code)
        }
    }

    @Test("no file but the waker's and the engine's rings the loop by hand")
    func ringsOnlyThroughTheWaker() throws {
        let sources = try Self.coreSources()
        #expect(sources.count > 20, "read \(sources.count) source files: the path to Sources/LongThreads is wrong")
        for (primitive, allowedIn) in Self.rawRings {
            let users = sources.filter { $0.code.contains(primitive) }.map(\.path)
            #expect(users.allSatisfy { $0 == allowedIn },
                    "\(primitive) is used in \(users.filter { $0 != allowedIn }): wake the loop through `withLockWaking`")
        }
        // In the engine, CF's wake-up and the port's write are `wake()`'s own, once each.
        let engine = try #require(sources.first { $0.path == "Engine/RunLoopEngine.swift" }).code
        for primitive in ["CFRunLoopWakeUp(", "CLongThreadsShims_eventfdSignal("] {
            #expect(engine.components(separatedBy: primitive).count == 2, "\(primitive) is called outside `wake()`")
        }
    }

    /// Every blocking public way to post work or add a timer, each made from a thread other than the
    /// loop's. (`run` and executor jobs take the same path as `perform`, `ThreadCore.enqueue`; their
    /// tasks need a cooperative thread, which these blocking tests would hold.)
    enum Post: String, CaseIterable, Sendable {
        case perform, performInModes, performWaitUntilDone, sync, syncWithTimeout, submit
        case performAtFrontOfQueue, performAfter, performAt, scheduleEvery

        func post(to thread: LongThread, _ ran: Latch) throws {
            switch self {
            case .perform: try thread.perform { ran.countDown() }
            case .performInModes: try thread.perform(modes: [.default, .init("lt-wake-other")]) { ran.countDown() }
            case .performWaitUntilDone: try thread.perform(waitUntilDone: true) { ran.countDown() }
            case .sync: try thread.sync { ran.countDown() }
            case .syncWithTimeout: try thread.sync(timeout: .seconds(30)) { ran.countDown() }
            case .submit: _ = try thread.submit { ran.countDown() }
            case .performAtFrontOfQueue: try thread.performAtFrontOfQueue { ran.countDown() }
            case .performAfter: try thread.perform(after: .milliseconds(1)) { ran.countDown() }
            case .performAt: try thread.perform(at: .now + .milliseconds(1)) { ran.countDown() }
            case .scheduleEvery:
                _ = try thread.schedule(every: .milliseconds(1)) { timer in
                    timer.cancel()
                    ran.countDown()
                }
            }
        }
    }

    @Test("every way to post wakes a parked loop", arguments: Post.allCases)
    func everyPostWakesAParkedLoop(post: Post) throws {
        // Parks for a minute after each reply: a post that does not ring the bell waits it out.
        let thread = try ParkTests.parkingThread("lt-wake")
        defer { thread.stop() }
        for round in 0..<5 {
            try thread.sync {}
            #expect(ParkTests.waitUntilParked(thread), "\(post), round \(round): the loop did not park after a reply")
            let ran = Latch()
            let poster = Thread { try? post.post(to: thread, ran) }
            poster.start()
            let didRun = ran.wait(timeout: .seconds(10))
            #expect(didRun, "\(post), round \(round): the work waited for the park to end")
            if !didRun { return }
        }
    }
}
