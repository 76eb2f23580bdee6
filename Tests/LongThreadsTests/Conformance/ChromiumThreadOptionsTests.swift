import CLongThreadsShims
import Foundation
import LongThreads
import Synchronization
import Testing

/// Chromium's `ThreadTest` cases about a thread's options (`base/threading/thread_unittest.cc`),
/// ported to `LongThread.Options`.
///
/// How the vocabularies map: `Thread::Options::stack_size` is ``LongThread/Options/stackSize``;
/// `Thread::Init()` and `CleanUp()` are ``LongThread/Options/setUp`` and
/// ``LongThread/Options/tearDown``; `StartWithOptions` is `LongThread.init(name:options:)`.
///
/// Divergences, each a documented decision:
/// - `StartWithOptions_NonJoinable` has no port: every LongThread can be joined
///   (``LongThread/waitUntilExit(timeout:)``), and one whose last handle goes stops by itself.
/// - `StartWithOptions_StackSize` runs 24 KiB in every build: Chromium doubles it in debug and
///   ASan builds, as its size is the whole stack; here it is the work's, and the library adds
///   its own share (larger in a sanitizer's build).
@Suite("Conformance: Chromium ThreadTest, options", .timeLimit(.minutes(1)))
struct ChromiumThreadOptionsTests {
    @Test("StartWithOptions_StackSize: a thread of 3072 pointer-sized slots (24 KiB) runs a task that uses 20 KiB of it")
    func startWithStackSize() throws {
        let size = 3072 * MemoryLayout<UInt>.size
        let thread = try LongThread(name: "StartWithStackSize", options: .init(stackSize: size))
        defer { thread.stop() }
        let used = try thread.sync { () -> Int in
            let entry = CLongThreadsShims_stackDepth()
            // Leaves 4 KiB of the work's 24 for the calls at the deepest frame.
            return Self.descend(to: entry + size - 4096) - entry
        }
        #expect(used >= size - 4096, "the task went \(used) bytes deep")
        // And the loop goes on serving after it.
        #expect(try thread.sync { 42 } == 42)
    }

    @Test("StartWithOptions_StackSize, the other sizes: 0 and PTHREAD_STACK_MIN run a task and serve on")
    func smallSizesServe() throws {
        for size in [0, 16 * 1024] {
            let thread = try LongThread(name: "SmallStack", options: .init(stackSize: size))
            defer { thread.stop() }
            let ran = Latch()
            try thread.perform { ran.countDown() }
            #expect(ran.wait())
            #expect(try thread.sync { size } == size)
        }
    }

    @Test("SleepInsideInit: setUp has run, sleep included, before init returns")
    func sleepInsideInit() throws {
        let initCalled = Atomic<Bool>(false)
        let options = LongThread.Options(setUp: {
            usleep(100_000)
            initCalled.store(true, ordering: .releasing)
        })
        let thread = try LongThread(name: "SleepInsideInit", options: options)
        defer { thread.stop() }
        let called = initCalled.load(ordering: .acquiring)
        #expect(called)
    }

    @Test("CleanUp: Init, the work, then CleanUp, on the thread, in that order")
    func cleanUp() throws {
        let events = Recorder<String>()
        let onThread = Recorder<Bool>()
        let options = LongThread.Options(
            setUp: { events.record("init") },
            tearDown: { events.record("cleanup") }
        )
        let thread = try LongThread(name: "CleanUp", options: options)
        try thread.perform { events.record("task"); onThread.record(thread.isCurrent) }
        thread.stop()
        #expect(events.events == ["init", "task", "cleanup"])
        #expect(onThread.events == [true])
    }

    /// Recurses until the calling thread's stack is `depth` bytes deep; returns the depth reached.
    @inline(never)
    static func descend(to depth: Int) -> Int {
        var pad: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64) = (1, 2, 3, 4, 5, 6, 7, 8)
        let here = CLongThreadsShims_stackDepth()
        if here >= depth { return here }
        return withUnsafeMutableBytes(of: &pad) { bytes in
            bytes[0] &+= 1 // a frame with a live buffer: stack the optimizer cannot drop
            return max(descend(to: depth), Int(bytes[0]))
        }
    }
}
