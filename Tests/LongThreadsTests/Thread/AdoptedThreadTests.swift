import CLongThreadsShims
import CoreFoundation
import Foundation
import Glibc
@testable import LongThreads
import LongThreadsTestSupport
import Testing

/// A thread of the test's own (a Foundation `Thread`, named `adopt-before`) that makes itself a
/// LongThread with `LongThread.runCurrentThread`, and records what it was before, the handle, what
/// the call threw, and what the thread looked like once it returned.
private final class AdoptingThread: @unchecked Sendable {
    private let lock = NSLock()
    private var _handle: LongThread?
    private var _outcome: Result<Void, any Error>?
    private var _bodyCalls = 0
    /// Counted down once the body published the handle.
    let published = Latch()
    /// Counted down once `runCurrentThread` returned (and `after` ran).
    let returned = Latch()
    /// Opened by the test (`letGo()`): until then the thread waits, so that its kernel name can be
    /// read after `runCurrentThread` returned.
    private let gate = Latch()
    let tid = Locked<Int32>(0)

    /// `before` runs on the thread before it is adopted, `after` once `runCurrentThread` returned
    /// (each adoption when `times` > 1), `body` inside it after the handle was published.
    init(
        times: Int = 1,
        options: LongThread.Options = .init(),
        before: @escaping @Sendable () -> Void = {},
        body: @escaping @Sendable (LongThread) throws -> Void = { _ in },
        after: @escaping @Sendable () -> Void = {}
    ) {
        Thread { [self] in
            _ = CLongThreadsShims_setCurrentThreadName("adopt-before")
            tid.withLock { $0 = CLongThreadsShims_gettid() }
            before()
            for _ in 0..<times {
                let outcome = Result<Void, any Error> {
                    try LongThread.runCurrentThread(name: "lt-adopted", options: options) { thread in
                        self.lock.withLock {
                            self._handle = thread
                            self._bodyCalls += 1
                        }
                        self.published.countDown()
                        try body(thread)
                    }
                }
                lock.withLock { _outcome = outcome }
                after()
            }
            returned.countDown()
            gate.wait()
        }.start()
    }

    /// Lets the thread end.
    func letGo() { gate.countDown() }

    var handle: LongThread? { lock.withLock { _handle } }
    var outcome: Result<Void, any Error>? { lock.withLock { _outcome } }
    var bodyCalls: Int { lock.withLock { _bodyCalls } }

    /// The thread's kernel name, read from outside.
    var kernelName: String {
        let tid = tid.withLock { $0 }
        let name = (try? String(contentsOfFile: "/proc/self/task/\(tid)/comm", encoding: .utf8)) ?? ""
        return name.trimmingCharacters(in: .newlines)
    }
}

/// The calling thread's kernel name.
private func currentName() -> String {
    var buffer = [CChar](repeating: 0, count: 16)
    _ = CLongThreadsShims_currentThreadName(&buffer, buffer.count)
    return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
}

/// Whether the stall monitor's capture signal is blocked on the calling thread.
private func captureSignalBlocked() -> Bool {
    var mask = sigset_t()
    pthread_sigmask(SIG_BLOCK, nil, &mask)
    return sigismember(&mask, CLongThreadsShims_stackCaptureSignal()) == 1
}

/// The calling thread's run loop: which of `objects` any of its modes still holds, and the modes
/// that are not empty (a run of them for no time does not report `kCFRunLoopRunFinished`).
private func leftovers(of objects: RunLoopEngine.LoopObjects) -> (held: Int, nonEmptyModes: [String]) {
    let loop = CFRunLoopGetCurrent()
    let modes = CFRunLoopCopyAllModes(loop)!
    var held = 0
    var nonEmpty: [String] = []
    for index in 0..<CFArrayGetCount(modes) {
        let mode = unsafeBitCast(CFArrayGetValueAtIndex(modes, index), to: CFString.self)
        held += objects.sources.count { CFRunLoopContainsSource(loop, $0, mode) }
        held += objects.observers.count { CFRunLoopContainsObserver(loop, $0, mode) }
        held += objects.timers.count { CFRunLoopContainsTimer(loop, $0, mode) }
        if CFRunLoopRunInMode(mode, 0, true) != .finished { nonEmpty.append(RunLoopEngine.string(mode)) }
    }
    return (held, nonEmpty)
}

/// The calling thread's scheduling policy.
private func currentPolicy() -> Int32 {
    var policy: Int32 = 0
    var parameters = sched_param()
    pthread_getschedparam(pthread_self(), &policy, &parameters)
    return policy
}

private struct BodyFailed: Error, Equatable {}
private struct SetUpFailed: Error, Equatable {}

@Suite("The calling thread as a LongThread (runCurrentThread)")
struct AdoptedThreadTests {
    @Test("serves posts, timers, modes, bound values and a stall monitor on the calling thread; setUp, values and tearDown in order; stop returns once the thread is given back")
    func servesAsASpawnedThreadDoes() throws {
        let log = Recorder<String>()
        let options = LongThread.Options(
            setUp: { log.record("setUp on \(CLongThreadsShims_gettid())") },
            tearDown: { log.record("tearDown on \(CLongThreadsShims_gettid())") }
        )
        let adopted = AdoptingThread(options: options)
        defer { adopted.letGo() }
        #expect(adopted.published.wait())
        let thread = try #require(adopted.handle)
        let tid = adopted.tid.withLock { $0 }
        #expect(try thread.kernelThreadID() == tid)
        #expect(adopted.kernelName == "lt-adopted")
        #expect(try thread.sync { LongThread.current === thread && thread.isCurrent })
        // A timer.
        let fired = Latch()
        try thread.perform(after: .milliseconds(5)) { if CLongThreadsShims_gettid() == tid { fired.countDown() } }
        #expect(fired.wait())
        // A custom mode, run nested by a task.
        let mode = RunLoop.Mode("lt-adopted-mode")
        let ranInMode = try thread.sync {
            let ran = Locked(false)
            try thread.perform(modes: [mode]) { ran.withLock { $0 = true } }
            try thread.runNested(in: mode, until: .now + .seconds(10)) { !ran.withLock { $0 } }
            return ran.withLock { $0 }
        }
        #expect(ranInMode)
        // A bound value, made, used and (at the stop) destroyed on the thread.
        let value = try ThreadBound(on: thread) { () -> Int32 in
            log.record("made on \(CLongThreadsShims_gettid())")
            return CLongThreadsShims_gettid()
        }
        #expect(try value.sync { $0 } == tid)
        try value.perform { _ in log.record("used on \(CLongThreadsShims_gettid())") }
        // A stall monitor.
        let reported = Latch()
        let monitor = try StallMonitor(threshold: .milliseconds(20)) { _ in reported.countDown() }
        monitor.watch(thread)
        try thread.sync { LingerTests.spin(nanoseconds: 100_000_000) }
        #expect(reported.wait())
        monitor.unwatch(thread)

        thread.stop()
        // stop returned: the thread is given back already (its name too), though
        // runCurrentThread may not have returned yet.
        #expect(adopted.kernelName == "adopt-before")
        #expect(adopted.returned.wait())
        #expect(throws: Never.self) { try adopted.outcome?.get() }
        #expect(throws: LongThreadError.stopped) { try thread.perform {} }
        #expect(throws: LongThreadError.stopped) { try value.sync { $0 } }
        #expect(log.events == ["setUp", "made", "used", "tearDown"].map { "\($0) on \(tid)" })
    }

    @Test("an actor pinned to the adopted thread runs its methods there")
    func actorPinned() async throws {
        let adopted = AdoptingThread()
        defer { adopted.letGo() }
        #expect(await adopted.published.value())
        let thread = try #require(adopted.handle)
        let counter = PinnedCounter(thread: thread)
        #expect(await counter.increment() == 1)
        #expect(await counter.onThread())
        await thread.stop()
        #expect(await adopted.returned.value())
    }

    @Test("a stop from the thread's own work ends the loop; runCurrentThread returns normally")
    func stopFromItsOwnWork() throws {
        let adopted = AdoptingThread()
        defer { adopted.letGo() }
        #expect(adopted.published.wait())
        let thread = try #require(adopted.handle)
        try thread.perform { thread.stop() }
        #expect(adopted.returned.wait())
        #expect(throws: Never.self) { try adopted.outcome?.get() }
        #expect(adopted.kernelName == "adopt-before")
    }

    @Test("an owner's deinit that stops the thread waits until it is given back")
    func stopFromAnOwnersDeinit() throws {
        final class Server {
            let thread: LongThread
            init(_ thread: LongThread) { self.thread = thread }
            deinit { thread.stop() }
        }
        let adopted = AdoptingThread()
        defer { adopted.letGo() }
        #expect(adopted.published.wait())
        var server: Server? = Server(try #require(adopted.handle))
        #expect(try server?.thread.sync { 1 } == 1)
        server = nil
        #expect(adopted.kernelName == "adopt-before")
        #expect(adopted.returned.wait())
    }

    @Test("body throwing stops the thread discarding what was posted, runs tearDown, and rethrows")
    func bodyThrows() throws {
        let log = Recorder<String>()
        let released = Latch()
        let keep = Recorder<ThreadBound<DeinitProbe>>()
        let adopted = AdoptingThread(
            options: .init(tearDown: { log.record("tearDown") }),
            body: { thread in
                let token = Tracked()
                try thread.perform { _ = token; log.record("ran") }
                keep.record(try ThreadBound(on: thread) { DeinitProbe { log.record("value destroyed"); released.countDown() } })
                throw BodyFailed()
            }
        )
        defer { adopted.letGo() }
        #expect(adopted.returned.wait())
        #expect(throws: BodyFailed()) { try adopted.outcome?.get() }
        #expect(released.wait())
        #expect(log.events == ["value destroyed", "tearDown"])
        #expect(adopted.kernelName == "adopt-before")
    }

    @Test("setUp throwing: runCurrentThread throws setUpFailed, body never runs, a value setUp bound is destroyed, no tearDown")
    func setUpThrows() throws {
        let log = Recorder<String>()
        let objects = Recorder<RunLoopEngine.LoopObjects>()
        let clean = Recorder<(held: Int, nonEmptyModes: [String])>()
        let keep = Recorder<ThreadBound<DeinitProbe>>()
        let adopted = AdoptingThread(
            options: .init(
                setUp: {
                    let core = try #require(ThreadCore.current)
                    objects.record(core.shared.withLock { $0.engine!.loopObjects })
                    keep.record(try ThreadBound(on: LongThread.current!) { DeinitProbe { log.record("value destroyed") } })
                    throw SetUpFailed()
                },
                tearDown: { log.record("tearDown") }
            ),
            after: { clean.record(leftovers(of: objects.events[0])) }
        )
        defer { adopted.letGo() }
        #expect(adopted.returned.wait())
        #expect(throws: LongThreadError.setUpFailed(SetUpFailed())) { try adopted.outcome?.get() }
        #expect(adopted.bodyCalls == 0)
        #expect(log.events == ["value destroyed"])
        #expect(clean.events.first?.held == 0)
        #expect(clean.events.first?.nonEmptyModes == [])
        #expect(adopted.kernelName == "adopt-before")
    }

    @Test("once runCurrentThread returned, none of the library's sources, observers or timers is in any mode, and name, signal mask and scheduling are back")
    func givesTheThreadBack() throws {
        let objects = Recorder<RunLoopEngine.LoopObjects>()
        let before = Recorder<(blocked: Bool, policy: Int32)>()
        let after = Recorder<(name: String, blocked: Bool, policy: Int32, left: (held: Int, nonEmptyModes: [String]))>()
        let adopted = AdoptingThread(
            options: .init(schedulingPolicy: .batch),
            before: {
                // The capture signal blocked, as a program may have it: a stall capture unblocks it.
                var set = sigset_t()
                sigemptyset(&set)
                sigaddset(&set, CLongThreadsShims_stackCaptureSignal())
                pthread_sigmask(SIG_BLOCK, &set, nil)
                before.record((captureSignalBlocked(), currentPolicy()))
            },
            after: {
                after.record((currentName(), captureSignalBlocked(), currentPolicy(), leftovers(of: objects.events.last!)))
            }
        )
        defer { adopted.letGo() }
        #expect(adopted.published.wait())
        let thread = try #require(adopted.handle)
        #expect(try thread.sync { currentPolicy() } == 3) // SCHED_BATCH, which Glibc's module hides
        usleep(2_000) // past the settle-in: the next callout installs the wake-up port
        try thread.sync {}
        _ = thread.statistics // counts wake-ups: a second observer
        try thread.perform(after: .seconds(60)) {} // the timer machinery
        try thread.perform(modes: [.default, RunLoop.Mode("lt-adopted-extra")]) {} // a custom mode
        var ends: [Int32] = [0, 0]
        #expect(pipe(&ends) == 0)
        defer { close(ends[0]); close(ends[1]) }
        _ = try thread.watch(ends[0], for: .readable) { _ in } // a descriptor source
        _ = try thread.addObserver(for: .all) { _ in } // an observer of the user's
        let reported = Latch()
        let monitor = try StallMonitor(threshold: .milliseconds(20)) { _ in reported.countDown() }
        monitor.watch(thread)
        try thread.sync { LingerTests.spin(nanoseconds: 100_000_000) } // a captured stall
        #expect(reported.wait())
        monitor.unwatch(thread)
        try thread.sync {
            #expect(!captureSignalBlocked())
            objects.record(thread.core.shared.withLock { $0.engine!.loopObjects })
        }
        let recorded = try #require(objects.events.last)
        #expect(recorded.sources.count == 3 && recorded.observers.count == 2 && recorded.timers.count == 1)
        thread.stop()
        #expect(adopted.returned.wait())
        let state = try #require(after.events.first)
        #expect(state.name == "adopt-before")
        #expect(state.blocked == before.events.first?.blocked)
        #expect(state.policy == before.events.first?.policy)
        #expect(state.left.held == 0)
        #expect(state.left.nonEmptyModes == [])
    }

    @Test("the same thread can be adopted again, and is given back clean each time")
    func adoptsAgain() throws {
        let objects = Recorder<RunLoopEngine.LoopObjects>()
        let left = Recorder<Int>()
        let adopted = AdoptingThread(
            times: 2,
            body: { thread in
                objects.record(thread.core.shared.withLock { $0.engine!.loopObjects })
                try thread.perform { thread.stop() }
            },
            after: { left.record(leftovers(of: objects.events.last!).held) }
        )
        defer { adopted.letGo() }
        #expect(adopted.returned.wait())
        #expect(adopted.bodyCalls == 2)
        #expect(throws: Never.self) { try adopted.outcome?.get() }
        #expect(left.events == [0, 0])
    }

    @Test("adopting a thread that is a LongThread already throws alreadyALongThread, and changes nothing")
    func misuse() throws {
        // Inside body, and from the adopted thread's own work.
        let inside = Recorder<Result<Void, any Error>>()
        let adopted = AdoptingThread(body: { _ in
            inside.record(Result { try LongThread.runCurrentThread { _ in } })
        })
        defer { adopted.letGo() }
        #expect(adopted.published.wait())
        let thread = try #require(adopted.handle)
        let fromWork = try thread.sync { Result { try LongThread.runCurrentThread { _ in } } }
        #expect(throws: LongThreadError.alreadyALongThread) { try inside.events.first?.get() }
        #expect(throws: LongThreadError.alreadyALongThread) { try fromWork.get() }
        #expect(try thread.sync { LongThread.current === thread }) // still served
        thread.stop()
        #expect(adopted.returned.wait())
        // From a task of a spawned thread.
        let spawned = try LongThread(name: "lt-adopt-misuse")
        defer { spawned.stop() }
        let fromSpawned = try spawned.sync { Result { try LongThread.runCurrentThread { _ in } } }
        #expect(throws: LongThreadError.alreadyALongThread) { try fromSpawned.get() }
        #expect(try spawned.sync { LongThread.current === spawned })
    }
}

/// Calls `onDeinit` when destroyed.
private final class DeinitProbe {
    let onDeinit: () -> Void
    init(_ onDeinit: @escaping () -> Void) { self.onDeinit = onDeinit }
    deinit { onDeinit() }
}

private actor PinnedCounter {
    let thread: LongThread
    nonisolated var unownedExecutor: UnownedSerialExecutor { thread.asUnownedSerialExecutor() }
    private var count = 0
    init(thread: LongThread) { self.thread = thread }
    func increment() -> Int {
        count += 1
        return count
    }
    func onThread() -> Bool { LongThread.current === thread }
}
