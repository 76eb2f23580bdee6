import Foundation
@testable import LongThreads
import LongThreadsTestSupport
import Testing

/// A box a setUp closure captures, as a user who opens a handle in setUp writes one.
private final class Box<Value>: @unchecked Sendable {
    var value: Value?
}

private struct FailedWith: Error {
    let value: ThreadBound<Int>
}

private struct SetUpFailed: Error {}

/// What setUp and tearDown capture, and what setUp throws, do not keep the thread's core alive
/// once they cannot run (`LoopState.hooks`, `takeSetUpError`): held, each would make a retain cycle
/// through the core's own `options` or its start handshake (LeakSanitizer reports the first, in
/// `ThreadBoundMisuseTests.boundBySetUp`).
@Suite("setUp and tearDown make no cycle with the thread")
struct HookCycleTests {
    @Test("a ThreadBound that setUp puts in a box it captured, then throws: the core goes with the box")
    func boundInACapturedBox() {
        let core = WeakBox(nil)
        do {
            let box = Box<ThreadBound<Int>>()
            #expect(throws: LongThreadError.self) {
                _ = try LongThread(name: "lt-hook-box", options: .init(setUp: {
                    core.value = ThreadCore.current
                    box.value = try ThreadBound(on: LongThread.current!) { 1 }
                    throw SetUpFailed()
                }))
            }
        }
        #expect(waitUntil { core.value == nil })
    }

    @Test("a ThreadBound in the error setUp throws: the core goes with the error")
    func boundInTheError() {
        let core = WeakBox(nil)
        do {
            #expect(throws: LongThreadError.self) {
                _ = try LongThread(name: "lt-hook-error", options: .init(setUp: {
                    core.value = ThreadCore.current
                    throw FailedWith(value: try ThreadBound(on: LongThread.current!) { 1 })
                }))
            }
        }
        #expect(waitUntil { core.value == nil })
    }

    @Test("setUp keeps the thread's handle in a box it captured: dropping the caller's handle still stops the thread")
    func handleInACapturedBox() throws {
        let core = WeakBox(nil)
        let tornDown = Latch()
        do {
            let box = Box<LongThread>()
            let thread = try LongThread(name: "lt-hook-handle", options: .init(
                setUp: { box.value = LongThread.current },
                tearDown: { tornDown.countDown() }
            ))
            core.value = thread.core
            #expect(box.value === thread)
        }
        // The box is setUp's alone now: the thread, having run setUp, no longer holds it.
        #expect(tornDown.wait())
        #expect(waitUntil { core.value == nil })
    }
}
