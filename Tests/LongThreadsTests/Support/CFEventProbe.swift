import CLongThreadsShims
import CoreFoundation
import Dispatch
import Foundation
import Synchronization

/// One of CF's own timers or sources on a LongThread's loop, installed by a task as user code
/// would (not through the thread's API): it fires `count` times, `interval` apart, and records
/// when each fell due (its timer's fire date, or the source's signal) and when it fired.
final class CFEventProbe: @unchecked Sendable {
    enum Kind: String, CaseIterable, Sendable, CustomStringConvertible {
        case foundationTimer = "a Foundation Timer"
        case cfTimer = "a CF timer"
        case cfSource0 = "a CF source0 signalled from another thread"
        var description: String { rawValue }
    }

    let kind: Kind
    let count: Int
    /// Nanoseconds between two fires (timers), or between a fire and the next signal (the source).
    let interval: UInt64
    /// Opens after the last fire.
    let done = Latch()
    /// Monotonic ns: when each fire fell due, and when it came.
    private let fires = Recorder<(due: UInt64, fired: UInt64)>()
    /// When the source was last signalled (monotonic ns).
    private let signalledAt = Atomic<UInt64>(0)
    private let performed = DispatchSemaphore(value: 0)
    // Loop thread only, once installed.
    private var expected: UInt64 = 0
    private var fired = 0
    // Written on the loop thread by `install`, read by the test's thread after the `sync` that ran it.
    private var source: CFRunLoopSource?
    private var runLoop: CFRunLoop?

    init(_ kind: Kind, count: Int = 30, interval: Duration = .milliseconds(5)) {
        self.kind = kind
        self.count = count
        self.interval = UInt64(interval.components.seconds) * 1_000_000_000 + UInt64(interval.components.attoseconds / 1_000_000_000)
    }

    /// On the loop thread, inside a task: arms the first timer, or adds the source to the default mode.
    func install() {
        runLoop = CFRunLoopGetCurrent()
        switch kind {
        case .foundationTimer, .cfTimer: armNext()
        case .cfSource0:
            var context = CFRunLoopSourceContext()
            context.info = Unmanaged.passUnretained(self).toOpaque()
            context.perform = { Unmanaged<CFEventProbe>.fromOpaque($0!).takeUnretainedValue().sourcePerformed() }
            let source = CFRunLoopSourceCreate(nil, 0, &context)
            CFRunLoopAddSource(CFRunLoopGetCurrent(), source, kCFRunLoopDefaultMode)
            self.source = source
        }
    }

    /// Any thread but the loop's, after `install`: signals the source `count` times, each
    /// `interval` after the last perform, as a producer outside the thread's API would (a signal
    /// and a wake-up). Returns early if a perform never comes (10 s): `done` stays shut.
    func signalSource() {
        guard let source, let runLoop else { return }
        for _ in 0..<count {
            usleep(useconds_t(interval / 1_000))
            signalledAt.store(CLongThreadsShims_monotonicNanoseconds(), ordering: .sequentiallyConsistent)
            CFRunLoopSourceSignal(source)
            CFRunLoopWakeUp(runLoop)
            if performed.wait(timeout: .now() + 10) == .timedOut { return }
        }
    }

    /// Removes the source (timers end by themselves). Any thread.
    func remove() {
        if let source { CFRunLoopSourceInvalidate(source) }
    }

    /// How late the fires came (ms), and how many of `starts` (monotonic ns: when each item or
    /// round trip of the thread began) fell between a fire's due time and the fire, at most.
    func figures(starts: [UInt64] = []) -> Figures {
        let fires = self.fires.events
        let sorted = fires.map { Double($0.fired &- $0.due) / 1e6 }.sorted()
        let starts = starts.sorted()
        let between = fires.map { fire in
            starts.partitioningIndex { $0 >= fire.fired } - starts.partitioningIndex { $0 > fire.due }
        }
        return Figures(kind: kind, latenesses: sorted, mostStartsBetween: between.max() ?? 0)
    }

    struct Figures: CustomStringConvertible {
        let kind: Kind
        /// Milliseconds, in increasing order.
        let latenesses: [Double]
        let mostStartsBetween: Int
        var p50: Double { latenesses.isEmpty ? 0 : latenesses[latenesses.count / 2] }
        var p90: Double { latenesses.isEmpty ? 0 : latenesses[latenesses.count * 9 / 10] }
        var worst: Double { latenesses.last ?? 0 }
        var description: String {
            String(format: "%d fires of %@: late p50 %.2f ms, p90 %.2f ms, worst %.2f ms; at most %d items began between falling due and firing",
                   latenesses.count, kind.rawValue, p50, p90, worst, mostStartsBetween)
        }
    }

    // MARK: - Loop thread

    private func armNext() {
        expected = CLongThreadsShims_monotonicNanoseconds() + interval
        let seconds = Double(interval) / 1e9
        switch kind {
        case .foundationTimer:
            // Not `Timer(timeInterval:repeats:block:)`: on Linux its first fire date is now.
            let timer = Timer(fire: Date(timeIntervalSinceNow: seconds), interval: 0, repeats: false) { [self] _ in timerFired() }
            RunLoop.current.add(timer, forMode: .default)
        case .cfTimer:
            var context = CFRunLoopTimerContext()
            context.info = Unmanaged.passUnretained(self).toOpaque()
            let timer = CFRunLoopTimerCreate(nil, CFAbsoluteTimeGetCurrent() + seconds, 0, 0, 0, { _, info in
                Unmanaged<CFEventProbe>.fromOpaque(info!).takeUnretainedValue().timerFired()
            }, &context)
            CFRunLoopAddTimer(CFRunLoopGetCurrent(), timer, kCFRunLoopDefaultMode)
        case .cfSource0:
            break
        }
    }

    private func timerFired() {
        // A timer may fire a little early (CF's clock is not the monotonic one): on time then.
        fires.record((expected, max(expected, CLongThreadsShims_monotonicNanoseconds())))
        fired += 1
        if fired < count { armNext() } else { done.countDown() }
    }

    private func sourcePerformed() {
        let now = CLongThreadsShims_monotonicNanoseconds()
        let signalled = signalledAt.load(ordering: .sequentiallyConsistent)
        fires.record((signalled, max(signalled, now)))
        fired += 1
        performed.signal()
        if fired == count { done.countDown() }
    }
}

extension Array {
    /// The index of the first element that satisfies `predicate`, which must hold for every
    /// element after it (a binary search); `count` when none does.
    func partitioningIndex(where predicate: (Element) -> Bool) -> Int {
        var (low, high) = (0, count)
        while low < high {
            let middle = (low + high) / 2
            if predicate(self[middle]) { high = middle } else { low = middle + 1 }
        }
        return low
    }
}
