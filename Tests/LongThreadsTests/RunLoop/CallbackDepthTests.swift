import Foundation
import LongThreads
import LongThreadsTestSupport
import Testing

/// A descriptor handler or an observer is called again and again for as long as its thread lives
/// (a connection of a daemon, for days). Each call must cost the same: a callback that went
/// through one more layer of wrapping at every call took longer each time, and its stack grew
/// until the thread overflowed it.
@Suite("A callback called many times", .timeLimit(.minutes(1)))
struct CallbackDepthTests {
    /// How far below the first call's stack a later call may start, in bytes. A call's own frames
    /// are the same each time; growth of a few frames per call reaches this in well under 100 calls.
    static let stackSlack = 2_048

    /// The address of a local of the caller: how deep the stack is at this point.
    @inline(never)
    static func stackDepthMarker() -> UInt {
        var local = 0
        return withUnsafeMutablePointer(to: &local) { UInt(bitPattern: $0) }
    }

    /// The stack depth at the 2nd and the `calls`-th call differ by less than `stackSlack`.
    static func expectFlat(_ recorded: [UInt], calls: Int, sourceLocation: SourceLocation = #_sourceLocation) throws {
        try #require(recorded.count >= calls, sourceLocation: sourceLocation)
        let growth = Int(bitPattern: recorded[1]) - Int(bitPattern: recorded[calls - 1])
        #expect(growth < stackSlack, "the stack grew \(growth) bytes over \(calls) calls", sourceLocation: sourceLocation)
    }

    @Test("a descriptor handler's 2,000th call starts as high on the stack as its second")
    func descriptorHandlerStackStaysFlat() throws {
        let thread = try LongThread(name: "lt-depth-watch")
        defer { thread.stop() }
        var fds: [Int32] = [0, 0]
        #expect(pipe(&fds) == 0)
        defer { close(fds[0]); close(fds[1]) }
        _ = fcntl(fds[0], F_SETFL, O_NONBLOCK)
        let calls = 2_000
        let depths = Recorder<UInt>()
        let all = Latch(count: calls)
        let reader = fds[0]
        let source = try thread.watch(reader, for: .readable) { _ in
            var byte: UInt8 = 0
            // One byte per call: the descriptor stays ready, so the handler is called once per byte.
            if read(reader, &byte, 1) == 1 {
                depths.record(Self.stackDepthMarker())
                all.countDown()
            }
        }
        defer { source.cancel() }
        let bytes = [UInt8](repeating: 7, count: calls)
        #expect(write(fds[1], bytes, bytes.count) == calls)
        #expect(all.wait())
        try Self.expectFlat(depths.events, calls: calls)
    }

    @Test("an observer's 2,000th call starts as high on the stack as its second")
    func observerStackStaysFlat() throws {
        let thread = try LongThread(name: "lt-depth-observer")
        defer { thread.stop() }
        let calls = 2_000
        let depths = Recorder<UInt>()
        let observer = try thread.addObserver(for: .entry, modes: [.default]) { _ in
            depths.record(Self.stackDepthMarker())
        }
        defer { observer.cancel() }
        // Each nested run that starts before its deadline enters the loop once: one `.entry`
        // callout each, from the same task.
        try thread.sync {
            var runs = 0
            while depths.events.count < calls, runs < 4 * calls {
                _ = try thread.runNested(in: .default, until: .now + .microseconds(50))
                runs += 1
            }
        }
        try Self.expectFlat(depths.events, calls: calls)
    }

    @Test("a repeating timer's 2,000th call starts as high on the stack as its second")
    func repeatingTimerStackStaysFlat() throws {
        let thread = try LongThread(name: "lt-depth-timer")
        defer { thread.stop() }
        let calls = 2_000
        let depths = Recorder<UInt>()
        let all = Latch(count: calls)
        let timer = try thread.schedule(every: .microseconds(20)) { timer in
            depths.record(Self.stackDepthMarker())
            all.countDown()
            if depths.events.count == calls { timer.cancel() }
        }
        defer { timer.cancel() }
        #expect(all.wait())
        try Self.expectFlat(depths.events, calls: calls)
    }
}
