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

    @Test("off the thread's lock, a debug build traps at the first touch of the engine's guarded state")
    func engineStateTrapsOffTheLock() async {
        await #expect(processExitsWith: .failure) { Self.touchEngineOffTheLock() }
    }

    /// Registers a mode with the running loop's engine without the thread's lock.
    static func touchEngineOffTheLock() {
        let thread = try! LongThread(name: "lt-engine-off-lock")
        try! thread.sync {}
        let engine = thread.core.shared.withLock { $0.engine }!
        try! engine.add(modeNamed: "lt-engine-off-lock-mode")
    }

    /// Reads the loop's state from the caller's thread once the loop runs.
    static func touchOffTheLoopThread() {
        let thread = try! LongThread(name: "lt-loop-state-off")
        try! thread.sync {}
        _ = thread.core.loop.calloutDepth
    }
    #endif

    @Test("the lock knows its holder: the check the engine's guarded state relies on")
    func lockKnowsItsHolder() throws {
        let thread = try LongThread(name: "lt-lock-holder")
        defer { thread.stop() }
        #expect(!thread.core.holdsEngineLock)
        #expect(thread.core.shared.withLock { _ in thread.core.holdsEngineLock })
        let heldElsewhere = try thread.sync { thread.core.holdsEngineLock }
        #expect(!heldElsewhere)
    }
}
