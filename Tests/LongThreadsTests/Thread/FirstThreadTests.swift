import CLongThreadsShims
import Foundation
import Glibc
@testable import LongThreads
import Testing

/// The first LongThread of a process does set-up no later one does (CF makes the main thread's run
/// loop beside the thread's own; Swift and the library make their lazily-initialised state). Each
/// test runs in a child process of its own (an exit test): in the test runner, some thread came
/// first long ago.
@Suite("The first thread of a process")
struct FirstThreadTests {
    @Test("with a stack size of 0 (the work needs nothing), the process's first thread (and a later one) does all the library does on it")
    func smallestStack() async {
        await #expect(processExitsWith: .success) {
            guard FirstThreadTests.fullLife(stackSize: 0) else { exit(1) }
            // A later one too, with the process's set-up done.
            exit(FirstThreadTests.fullLife(stackSize: 0) ? 0 : 2)
        }
    }

    @Test("sizes once refused, PTHREAD_STACK_MIN (16 KiB) included, are served in a fresh process; a negative one throws cannotStart(EINVAL)")
    func belowTheOldFloor() async {
        await #expect(processExitsWith: .success) {
            do {
                _ = try LongThread(name: "lt-negative", options: .init(stackSize: -1))
                exit(1)
            } catch LongThreadError.cannotStart(let errno) where errno == EINVAL {
            } catch {
                exit(2)
            }
            for size in [16 * 1024, 60 * 1024] {
                guard FirstThreadTests.fullLife(stackSize: size) else { exit(3) }
            }
            exit(0)
        }
    }

    @Test(
        "the process's first thread with few descriptors free starts or throws EMFILE, never halts the process",
        arguments: 0...9
    )
    func firstThreadNearTheLimit(free: Int) async {
        await #expect(processExitsWith: .success) { [free] in
            FirstThreadTests.startFirstThread(free: free)
        }
    }

    /// In the child: starts a thread on a stack of `stackSize` bytes and has it do what the library
    /// does on its own stack: work, a timer, a descriptor source, an observer, a new mode and a
    /// nested run in it, a stalled item whose stack a monitor captures (a signal handled on that
    /// stack), settling in (its first callout after a millisecond asks for its scheduler slice and
    /// makes its wake-up port), and a stop. Whether all of it went through. With `highWater`, the
    /// thread's stack is painted first, and `highWater` gets the deepest use of it before the stop.
    static func fullLife(stackSize: Int?, highWater: ((Int) -> Void)? = nil) -> Bool {
        guard let thread = try? LongThread(name: "lt-small-stack", options: .init(stackSize: stackSize)),
              (try? thread.sync({ 6 * 7 })) == 42
        else { return false }
        defer { thread.stop() }
        if highWater != nil { _ = try? thread.sync { CLongThreadsShims_paintStack() } }
        let fired = DispatchSemaphore(value: 0)
        var ends: [Int32] = [0, 0]
        guard (try? thread.perform(after: .milliseconds(2)) { fired.signal() }) != nil,
              fired.wait(timeout: .now() + 10) == .success,
              pipe(&ends) == 0,
              let source = try? thread.watch(ends[0], for: .readable, { _ in fired.signal() }),
              write(ends[1], "x", 1) == 1,
              fired.wait(timeout: .now() + 10) == .success,
              let observer = try? thread.addObserver(for: .all, { _ in })
        else { return false }
        source.cancel()
        observer.cancel()
        usleep(5_000)
        let reported = DispatchSemaphore(value: 0)
        guard let monitor = try? StallMonitor(threshold: .milliseconds(20), handler: { _ in reported.signal() }) else {
            return false
        }
        monitor.watch(thread)
        let nested = try? thread.sync { try thread.runNested(in: RunLoop.Mode("lt-small-stack-mode"), until: .now) }
        // Spins: a thread asleep in a system call other than a futex wait is not signalled for its
        // stack (its report reads /proc instead), and the point is a signal handled on this stack.
        guard nested != nil, (try? thread.sync({ LingerTests.spin(nanoseconds: 100_000_000) })) != nil,
              reported.wait(timeout: .now() + 10) == .success
        else { return false }
        monitor.unwatch(thread)
        if let highWater, let deepest = try? thread.sync({ CLongThreadsShims_stackHighWater() }) { highWater(deepest) }
        thread.stop()
        return thread.waitUntilExit(timeout: .seconds(10))
    }

    /// In the child: leaves `free` descriptors below the limit and starts the process's first
    /// thread there: it must start and serve, or throw `cannotStart(EMFILE)` (with 3 or fewer free
    /// always: CF needs 3 for the thread's loop; with 8 or more, never: 3 for the main thread's
    /// loop, 3 for the thread's and the headroom's spare make 7, and one more is slack); then,
    /// with the descriptors freed, a thread must start and serve. Exits 0 when all held.
    static func startFirstThread(free: Int) -> Never {
        guard DescriptorExhaustionTests.lowerDescriptorLimit() != nil else { exit(2) }
        var filler: [Int32] = []
        while true {
            let fd = open("/dev/null", O_RDONLY)
            if fd < 0 { break }
            filler.append(fd)
        }
        guard filler.count >= free else { exit(3) }
        for fd in filler.suffix(free) { close(fd) }
        filler.removeLast(free)
        do {
            let thread = try LongThread(name: "lt-first-fd")
            guard free > 3, (try? thread.sync({ 1 })) == 1 else { exit(4) }
            thread.stop()
        } catch LongThreadError.cannotStart(let errno) where errno == EMFILE {
            if free >= 8 { exit(5) }
        } catch {
            exit(6)
        }
        for fd in filler { close(fd) }
        guard let after = try? LongThread(name: "lt-first-after"), (try? after.sync({ 2 })) == 2 else { exit(7) }
        after.stop()
        exit(0)
    }
}

/// The library's own frames fit in what it adds to a thread's stack (`StackReserve`).
@Suite("The stack the library adds")
struct StackReserveTests {
    @Test("the library's deepest use of the stack of a process's first thread (a full life, painted) fits in its own share")
    func ownFramesFit() async throws {
        // In a fresh process: the first thread instantiates the runtime's metadata on its own
        // stack, the deepest it goes (28 KiB where a later one in the test runner went 21).
        let result = await #expect(processExitsWith: .success, observing: [\.standardOutputContent]) {
            var measured = 0
            guard FirstThreadTests.fullLife(stackSize: nil, highWater: { measured = $0 }) else { exit(1) }
            FileHandle.standardOutput.write(Data("\(measured)\n".utf8))
            let library = StackReserve.ownFrames * Int(CLongThreadsShims_sanitizerStackFactor())
            exit(measured > 0 && measured <= library ? 0 : 2)
        }
        let output = String(decoding: try #require(result).standardOutputContent, as: UTF8.self)
        print("StackReserveTests: deepest use \(output.trimmingCharacters(in: .whitespacesAndNewlines)) bytes of \(StackReserve.ownFrames) (debug: \(_isDebugAssertConfiguration()))")
    }
}
