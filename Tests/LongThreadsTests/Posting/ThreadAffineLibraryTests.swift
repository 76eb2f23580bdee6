import CThreadAffineFixture
import Foundation
import LongThreads
import LongThreadsTestSupport
import Testing

/// The fake thread-affine library (`CThreadAffineFixture`) as a Swift value: made, called and
/// deleted wherever this type's methods run. Not `Sendable`: it never leaves its thread.
private final class AffineLibrary {
    let library: OpaquePointer

    init() { library = CThreadAffineFixture_create() }

    func call(_ value: Int64) -> Int64 { CThreadAffineFixture_call(library, value) }

    deinit { CThreadAffineFixture_destroy(library) }
}

/// The fixture's bookkeeping outlives the library (it is freed by the test), so that a test can
/// read what happened after the library was deleted on its thread.
private struct LibraryRecord: @unchecked Sendable {
    let library: OpaquePointer
    var stats: CThreadAffineFixture_Stats { CThreadAffineFixture_stats(library) }
    func free() { CThreadAffineFixture_free(library) }
}

/// An actor pinned to the library's thread that owns a second instance, opened and closed in
/// isolated methods (its `init` and `deinit` run on the caller's thread).
private actor AffineInterpreter {
    let thread: LongThread
    nonisolated var unownedExecutor: UnownedSerialExecutor { thread.asUnownedSerialExecutor() }
    private var library: OpaquePointer?

    init(thread: LongThread) { self.thread = thread }

    func open() -> LibraryRecord {
        let library = CThreadAffineFixture_create()!
        self.library = library
        return LibraryRecord(library: library)
    }

    func call(_ value: Int64) -> Int64? {
        library.map { CThreadAffineFixture_call($0, value) }
    }

    /// From work posted to the thread (blocking callers): the actor's isolation, assumed.
    nonisolated func callFromThreadWork(_ value: Int64) -> Int64? {
        assumeIsolated { $0.call(value) }
    }

    func close() {
        if let library { CThreadAffineFixture_destroy(library) }
        library = nil
    }
}

/// A service embedding a thread-affine interpreter (as Tcl 8.6's: created, used and deleted on one
/// thread), reached by a pinned actor and by a `ThreadBound` value from 8 async callers and 2
/// blocking threads, then stopped while they still call, then called and released after the end.
@Suite("A thread-affine C library reached by a pinned actor and a bound value")
struct ThreadAffineLibraryTests {
    static let asyncCallers = 8
    static let blockingCallers = 2
    static let callsPerCaller = 200

    @Test("the library never runs off its thread: through use, a stop with callers still calling, and calls and release after the end")
    func libraryStaysOnItsThread() async throws {
        let thread = try LongThread(name: "affine-lib")
        let bound = try await ThreadBound(on: thread) { AffineLibrary() }
        let boundRecord = try await bound.run { LibraryRecord(library: $0.library) }
        let interpreter = AffineInterpreter(thread: thread)
        let actorRecord = await interpreter.open()
        defer { boundRecord.free(); actorRecord.free() }

        // In use: every caller reaches both instances.
        let served = try await Self.callFromEveryone(bound, interpreter, thread: thread)
        #expect(served == Int64((Self.asyncCallers + Self.blockingCallers) * Self.callsPerCaller * 2))

        // Stopping: the thread is held, the stop begins, and callers call while it drains.
        let gate = Latch()
        try await thread.blockForStop(until: gate)
        thread.stop(waitUntilDone: false)
        let outcomes = Recorder<String>()
        // Preferring the thread, each task's first job is queued as the task is made: every call
        // reaches the thread while it drains, however slow the cooperative pool is.
        let lateActorCalls = (0..<Self.asyncCallers).map { _ in Task(executorPreference: thread) { await interpreter.call(1) } }
        let lateBoundCalls = (0..<Self.asyncCallers).map { _ in
            Task { () -> String in
                do { return "ran \(try await bound.run { $0.call(1) })" } catch { return "\(error)" }
            }
        }
        let blocking = (0..<Self.blockingCallers).map { _ in
            Task { try await offThePool {
                do { _ = try bound.sync { $0.call(1) }; outcomes.record("ran") } catch { outcomes.record("\(error)") }
                do { _ = try thread.sync { interpreter.callFromThreadWork(1) }; outcomes.record("ran") } catch { outcomes.record("\(error)") }
            } }
        }
        let close = Task(executorPreference: thread) { await interpreter.close() }     // the actor's last call: queued while draining
        #expect(await eventually { thread.statistics.pending >= Self.asyncCallers + 1 })
        gate.countDown()
        for call in lateActorCalls { #expect(await call.value == 2) }    // ran on the thread, in the drain
        for call in lateBoundCalls { #expect(await call.value == String(describing: LongThreadError.stopped)) }
        for caller in blocking { try await caller.value }
        #expect(outcomes.events == Array(repeating: String(describing: LongThreadError.stopped), count: Self.blockingCallers * 2))
        await close.value
        #expect(await Latch.exit(of: thread))

        // After the end: the bound value was deleted on the thread at its end; calls get an error.
        await #expect(throws: LongThreadError.stopped) { try await bound.run { $0.call(1) } }
        #expect(throws: LongThreadError.stopped) { try bound.perform { _ = $0.call(1) } }
        await bound.release()                              // destroyed at the end already: returns at once
        await #expect(throws: LongThreadError.released) { try await bound.run { $0.call(1) } }
        let boundStats = boundRecord.stats
        let actorStats = actorRecord.stats
        #expect(boundStats.violations == 0)
        #expect(actorStats.violations == 0)
        #expect(boundStats.destroyed == 1 && boundStats.destroyedOnThread == 1)
        #expect(actorStats.destroyed == 1 && actorStats.destroyedOnThread == 1)
        // Nothing lost: every call the library counted was answered, every other was refused.
        #expect(boundStats.calls == Int64((Self.asyncCallers + Self.blockingCallers) * Self.callsPerCaller))
        #expect(actorStats.calls == Int64((Self.asyncCallers + Self.blockingCallers) * Self.callsPerCaller + Self.asyncCallers))
        withExtendedLifetime(bound) {}
    }

    @Test("a call to the pinned actor after the thread ended traps with the documented message; the library is not run elsewhere")
    func actorCallAfterTheEndTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent, \.standardOutputContent]) {
            let thread = try! LongThread(name: "affine-lib-late")
            let interpreter = AffineInterpreter(thread: thread)
            let record = await interpreter.open()
            _ = await interpreter.call(1)
            await thread.stop()
            FileHandle.standardOutput.write(Data(("violations before: \(record.stats.violations)" + "\n").utf8)) // unbuffered: a trap flushes nothing
            _ = await interpreter.call(1)
            print("violations after: \(record.stats.violations)")
        }
        let output = String(decoding: result?.standardOutputContent ?? [], as: UTF8.self)
        let message = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(output.contains("violations before: 0"))
        #expect(!output.contains("violations after"))
        #expect(message.contains("BUG DETECTED: a job for LongThread \"affine-lib-late\""))
    }

    /// 8 async callers and 2 blocking threads, each calling both instances `callsPerCaller`
    /// times; returns the sum of what the calls answered (each answers 1).
    private static func callFromEveryone(
        _ bound: ThreadBound<AffineLibrary>, _ interpreter: AffineInterpreter, thread: LongThread
    ) async throws -> Int64 {
        try await withThrowingTaskGroup(of: Int64.self) { group in
            for _ in 0..<asyncCallers {
                group.addTask {
                    var sum: Int64 = 0
                    for _ in 0..<callsPerCaller {
                        sum += try await bound.run { $0.call(0) }
                        sum += await interpreter.call(0) ?? 0
                    }
                    return sum
                }
            }
            for _ in 0..<blockingCallers {
                group.addTask {
                    try await offThePool {
                        var sum: Int64 = 0
                        for _ in 0..<callsPerCaller {
                            sum += try bound.sync { $0.call(0) }
                            sum += try thread.sync { interpreter.callFromThreadWork(0) } ?? 0
                        }
                        return sum
                    }
                }
            }
            return try await group.reduce(0, +)
        }
    }
}
