import Foundation
import LongThreads
import LongThreadsTestSupport
import Testing

/// Chromium's `SequenceBoundTest` fixture values: the constructor and destructor leave a mark.
private enum Mark: Equatable, Sendable {
    case initial, different, derivedCtor, derivedDtor
}

/// Chromium's `Derived`: sets the mark when made and when destroyed, and records whether it was
/// destroyed on its thread.
private final class Derived {
    let mark: Recorder<Mark>
    let onThread: @Sendable () -> Bool
    let destroyedOnThread: Recorder<Bool>
    var destructionCallback: (@Sendable () -> Void)?

    init(mark: Recorder<Mark>, destroyedOnThread: Recorder<Bool>, onThread: @escaping @Sendable () -> Bool) {
        self.mark = mark
        self.onThread = onThread
        self.destroyedOnThread = destroyedOnThread
        mark.record(.derivedCtor)
    }

    func setValue(_ value: Mark) { mark.record(value) }

    deinit {
        destroyedOnThread.record(onThread())
        mark.record(.derivedDtor)
        destructionCallback?()
    }
}

/// Chromium's `BoxedValue`.
private final class BoxedValue {
    var value: Int
    var destructionCallback: (@Sendable () -> Void)?
    init(_ value: Int) { self.value = value }
    deinit { destructionCallback?() }
}

/// Chromium's base/threading/sequence_bound_unittest.cc, for the cases that map to `ThreadBound`.
///
/// Not ported, by design: the move-construction and move-assignment cases (`MoveConstruction*`,
/// `MoveAssignment*`, `SelfMoveAssign`, `*FromNullWorks`) and the upcasts (`MultiplyDerived*`,
/// `…FromDerivedClass`): a `ThreadBound` is a reference, shared rather than moved, and its value
/// type is fixed (no `SequenceBound<Base>` from `SequenceBound<Derived>`); a released handle
/// refuses calls with `.released` where Chromium's null `SequenceBound` CHECKs.
/// Divergence: Chromium posts the construction and returns; `ThreadBound.init` awaits it (its
/// error is thrown to the caller), so `PostBeforeConstruction` becomes "a call right after init
/// finds the value made".
@Suite("Conformance: Chromium SequenceBound")
struct ChromiumSequenceBoundTests {
    private static func makeDerived(on thread: LongThread) async throws -> (ThreadBound<Derived>, Recorder<Mark>, Recorder<Bool>) {
        let mark = Recorder<Mark>()
        let destroyedOnThread = Recorder<Bool>()
        let bound = try await ThreadBound(on: thread) {
            Derived(mark: mark, destroyedOnThread: destroyedOnThread) { thread.isCurrent }
        }
        return (bound, mark, destroyedOnThread)
    }

    @Test("sequence_bound_unittest.cc ConstructAsyncCallReset: made on the thread, called, and release() returns once destroyed there")
    func constructAsyncCallReset() async throws {
        let thread = try LongThread(name: "cr-seqbound-reset")
        defer { thread.stopAtTestEnd() }
        let (derived, mark, destroyedOnThread) = try await Self.makeDerived(on: thread)
        #expect(mark.events == [.derivedCtor])
        try derived.perform { $0.setValue(.different) }
        await derived.release()
        #expect(mark.events == [.derivedCtor, .different, .derivedDtor])     // the call ran first
        #expect(destroyedOnThread.events == [true])
        await #expect(throws: LongThreadError.released) { try await derived.run { _ in } }
    }

    @Test("sequence_bound_unittest.cc PostBeforeConstruction (diverges: init awaits the making): a call right after init finds the value made")
    func postRightAfterConstruction() async throws {
        let thread = try LongThread(name: "cr-seqbound-post")
        defer { thread.stopAtTestEnd() }
        let (derived, mark, _) = try await Self.makeDerived(on: thread)
        try derived.perform { $0.setValue(.different) }
        try await thread.run {}
        #expect(mark.events == [.derivedCtor, .different])
        await derived.release()
    }

    @Test("sequence_bound_unittest.cc ResetOnNullObjectWorks: a second release returns at once and does nothing more")
    func releaseTwice() async throws {
        let thread = try LongThread(name: "cr-seqbound-twice")
        defer { thread.stopAtTestEnd() }
        let (derived, mark, _) = try await Self.makeDerived(on: thread)
        await derived.release()
        await derived.release()
        #expect(mark.events == [.derivedCtor, .derivedDtor])
    }

    @Test("sequence_bound_unittest.cc PostTaskWithThisObject: bodies run in order, each seeing what the last one left")
    func postTaskWithThisObject() async throws {
        let thread = try LongThread(name: "cr-seqbound-this")
        defer { thread.stopAtTestEnd() }
        let value = try await ThreadBound(on: thread) { BoxedValue(42) }
        let seen = Recorder<Int>()
        try value.perform { seen.record($0.value) }
        try value.perform { $0.value = 43 }
        try value.perform { seen.record($0.value) }
        try await thread.run {}
        #expect(seen.events == [42, 43])
    }

    @Test("sequence_bound_unittest.cc SynchronouslyResetForTest: release(waitUntilDone:) returns once the value's deinit ran")
    func synchronouslyReset() async throws {
        let thread = try LongThread(name: "cr-seqbound-sync-reset")
        defer { thread.stopAtTestEnd() }
        let value = try await ThreadBound(on: thread) { BoxedValue(0) }
        let destroyed = Latch()
        try value.perform { $0.destructionCallback = { destroyed.countDown() } }
        let returned = try await offThePool { () -> Bool in
            value.release(waitUntilDone: true)
            return destroyed.isOpen
        }
        #expect(returned)
    }

    @Test("sequence_bound_unittest.cc SmallObject: an empty value binds, and is released")
    func smallObject() async throws {
        struct Empty {}
        let thread = try LongThread(name: "cr-seqbound-small")
        defer { thread.stopAtTestEnd() }
        let value = try await ThreadBound(on: thread) { Empty() }
        _ = try await value.run { _ in 0 }
        await value.release()
    }

    @Test("sequence_bound_unittest.cc AsyncCall…Then (NoArgsIntReturn, IntArgIntReturn): a call's result comes back to the caller")
    func asyncCallThen() async throws {
        let thread = try LongThread(name: "cr-seqbound-then")
        defer { thread.stopAtTestEnd() }
        let value = try await ThreadBound(on: thread) { BoxedValue(123) }
        #expect(try await value.run { $0.value } == 123)
        let argument = 7
        #expect(try await value.run { _ in -argument } == -7)
        #expect(try await offThePool { try value.sync { $0.value } } == 123)
    }

    // MARK: - Release, beyond Chromium

    @Test("work queued before release() runs first, with the value; calls after it throw .released")
    func releaseKeepsOrder() async throws {
        let thread = try LongThread(name: "cr-seqbound-order")
        defer { thread.stopAtTestEnd() }
        let (derived, mark, destroyedOnThread) = try await Self.makeDerived(on: thread)
        let gate = Latch()
        try await thread.block(until: gate)
        let queued = Task { try await derived.run { $0.setValue(.different) } }
        #expect(await eventually { thread.statistics.pending >= 1 })
        async let released: Void = derived.release()
        #expect(await eventually { thread.statistics.pending >= 2 })
        #expect(throws: LongThreadError.released) { try derived.perform { _ in } }
        gate.countDown()
        try await queued.value
        await released
        #expect(mark.events == [.derivedCtor, .different, .derivedDtor])
        #expect(destroyedOnThread.events == [true])
    }

    @Test("release() with the thread's queue full is neither refused nor kept waiting for room; the bodies queued before it still run first")
    func releaseWithAFullQueue() async throws {
        let thread = try LongThread(
            name: "cr-seqbound-full", options: .init(queueLimit: .init(highWatermark: 4, whenFull: .throwError))
        )
        defer { thread.stopAtTestEnd() }
        let (derived, mark, destroyedOnThread) = try await Self.makeDerived(on: thread)
        let gate = Latch()
        try await thread.block(until: gate)
        var queued = 0
        while true {
            do {
                try derived.perform { $0.setValue(.different) }
                queued += 1
            } catch {
                #expect(error == .queueFull)
                break
            }
        }
        async let released: Void = derived.release()
        #expect(await eventually { thread.statistics.pending > queued })   // the release is queued
        gate.countDown()
        await released
        #expect(mark.events == [.derivedCtor] + Array(repeating: .different, count: queued) + [.derivedDtor])
        #expect(destroyedOnThread.events == [true])
    }

    @Test("release() once the thread has stopped returns when the thread's end destroyed the value, on the thread")
    func releaseAfterStop() async throws {
        let thread = try LongThread(name: "cr-seqbound-stopped")
        let (derived, mark, destroyedOnThread) = try await Self.makeDerived(on: thread)
        let gate = Latch()
        try await thread.block(until: gate)
        thread.stop(waitUntilDone: false)
        async let released: Void = derived.release()
        gate.countDown()
        await released
        #expect(mark.events == [.derivedCtor, .derivedDtor])
        #expect(destroyedOnThread.events == [true])
        await derived.release()                                  // after the end: at once
        #expect(await thread.waitUntilExit())
    }

    @Test("thread names the value's thread, and is nil once that thread's last handle is gone")
    func threadIsReadable() async throws {
        var thread: LongThread? = try LongThread(name: "cr-seqbound-thread")
        let value = try await ThreadBound(on: thread!) { 0 }
        #expect(value.thread === thread)
        let weak = WeakBox(thread!)
        thread = nil                                             // the last handle: the thread stops
        #expect(await eventually { weak.value == nil })
        #expect(value.thread == nil)
    }
}
