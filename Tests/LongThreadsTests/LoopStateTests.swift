import Foundation
@testable import LongThreads
import LongThreadsTestSupport
import Testing

/// The loop thread's own state (`LoopState`, `ThreadCore.loop`) is touched on that thread only:
/// debug builds check each access, as NIO's `assertInEventLoop` does.
@Suite("The loop thread's own state")
struct LoopStateTests {
    @Test("the loop's state is reached through `loop` only, which checks the thread")
    func onlyThroughTheCheckedAccessor() throws {
        let sources = try WakeProtocolTests.coreSources()
        let users = sources.filter { $0.code.contains("loopStorage") }.map(\.path)
        #expect(users.sorted() == ["Internal/Loop/LoopState.swift", "Internal/ThreadCore.swift"],
                "`loopStorage` is used in \(users): use `loop`, which checks the thread in debug builds")
    }

    @Test("on its own thread the loop's state is reachable, from work and from callbacks")
    func reachableOnTheLoopThread() throws {
        let thread = try LongThread(name: "lt-loop-state")
        defer { thread.stop() }
        let depth = try thread.sync { thread.core.loop.calloutDepth }
        #expect(depth == 1, "work runs in one callout, not \(depth)")
    }

    #if DEBUG
    @Test("off the loop thread, a debug build traps at the first touch of the loop's state")
    func trapsOffTheLoopThread() async {
        await #expect(processExitsWith: .failure) { Self.touchOffTheLoopThread() }
    }

    /// Reads the loop's state from the caller's thread once the loop runs.
    static func touchOffTheLoopThread() {
        let thread = try! LongThread(name: "lt-loop-state-off")
        try! thread.sync {}
        _ = thread.core.loop.calloutDepth
    }
    #endif
}
