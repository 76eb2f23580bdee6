import CLongThreadsShims
import Glibc
import Synchronization

/// Reports when one callout on a LongThread — a task or a timer — runs longer than a threshold:
/// the lag monitor of the seeds, which watches run-loop activity to catch a stuck thread.
///
/// One monitor serves many threads, with one thread of its own (``threadName``). A LongThread
/// records when each of its callouts begins (a drain of queued work, a timer, a descriptor
/// handler) whether or not it is watched; a watched thread starting a callout wakes an idle
/// monitor once, and the monitor then sleeps until the earliest moment a running callout would
/// cross the threshold. While every watched thread is idle the monitor sleeps with no timeout and
/// costs no CPU (after at most one more wake-up, at the last callout's due time). A stall is
/// reported once per callout, while it still runs, within the threshold plus the monitor's
/// wake-up latency (well under twice the threshold), to the stalled thread's instrument and then
/// to `handler` on the monitor's thread. A callout already running when ``watch(_:)`` is called
/// counts from its start.
///
/// A task running the loop nested (``LongThread/runNested(in:until:while:)``) stays one callout:
/// it is reported if the whole task runs past the threshold.
///
/// The stalled thread's stack is not captured: that takes a signal, which would interrupt the
/// thread's sleeping system calls with `EINTR`. The report names the thread and the task's label
/// (`perform(label:)`), which is what a reader needs to find the culprit.
public final class StallMonitor: Sendable {
    /// One stalled callout.
    public struct Report: Sendable, CustomStringConvertible {
        /// The stalled thread's name.
        public var threadName: String?
        /// The label of the work running, when it was posted with one.
        public var label: String?
        /// How long the callout had run when it was reported.
        public var duration: Duration

        /// One line for logs: the thread, the task's label, how long it has run.
        public var description: String {
            let what = label.map { "task \"\($0)\"" } ?? "a callout"
            let millis = Double(duration.components.seconds) * 1000 + Double(duration.components.attoseconds) / 1e15
            return "LongThread \(threadName.map { "\"\($0)\"" } ?? "(unnamed)") stalled: \(what) has run for \(Int(millis)) ms"
        }
    }

    /// The kernel name of the monitor's thread.
    public static let threadName = "stall.monitor"

    /// The longest a callout may run before it is reported.
    public let threshold: Duration
    private let state: StallMonitorState
    private let thread: pthread_t

    /// Starts a monitor (and its thread) that reports callouts running longer than `threshold`.
    ///
    /// - Parameters:
    ///   - threshold: How long a callout (a task or a timer) may run before it is reported; positive.
    ///   - handler: Called on the monitor's thread, once per stalled callout. Keep it short: while
    ///     it runs, other stalls wait.
    /// - Throws: ``LongThreadError/cannotStart(errno:)`` if its thread cannot be created.
    /// - Precondition: `threshold` is positive.
    public init(threshold: Duration, handler: @escaping @Sendable (Report) -> Void) throws(LongThreadError) {
        precondition(threshold > .zero, "StallMonitor needs a positive threshold, got \(threshold)")
        self.threshold = threshold
        let state = StallMonitorState(threshold: UInt64(threshold.clampedNanoseconds), handler: handler)
        self.state = state
        thread = try PosixThread.spawn(options: .init()) { state.run() }
    }

    /// Stops watching every thread, stops the monitor and joins its thread.
    deinit {
        for core in state.watchedCores() { state.detach(from: core) }
        state.stop()
        if pthread_equal(thread, pthread_self()) != 0 {
            pthread_detach(thread) // the handler dropped the last reference, on the monitor's thread
        } else {
            pthread_join(thread, nil)
        }
    }

    /// Watches `thread` until it stops, ``unwatch(_:)`` or the monitor goes. Idempotent.
    /// - Callable from: any thread.
    public func watch(_ thread: LongThread) {
        state.attach(to: thread.core)
    }

    /// Stops watching `thread`.
    /// - Callable from: any thread.
    public func unwatch(_ thread: LongThread) {
        state.detach(from: thread.core)
    }
}

/// What a monitor's thread and the watched threads share.
final class StallMonitorState: Sendable {
    /// One watched thread.
    private final class Watch: @unchecked Sendable {
        weak var core: ThreadCore?
        /// Monitor thread only: the callout start last reported, so each callout is reported once.
        var reportedStart: UInt64 = 0
        init(core: ThreadCore) { self.core = core }
    }

    private let threshold: UInt64
    private let handler: @Sendable (StallMonitor.Report) -> Void
    private let watches = Locked<[Watch]>([])
    private let bell = Doorbell()
    /// True while the monitor sleeps with no timeout: the next thread to start a callout rings.
    private let idle = Atomic<Bool>(false)
    private let running = Atomic<Bool>(true)

    init(threshold: UInt64, handler: @escaping @Sendable (StallMonitor.Report) -> Void) {
        self.threshold = threshold
        self.handler = handler
    }

    func attach(to core: ThreadCore) {
        let added = watches.withLock { watches -> Bool in
            guard !watches.contains(where: { $0.core === core }) else { return false }
            watches.append(Watch(core: core))
            return true
        }
        guard added else { return }
        core.monitors.withLock { $0.append(self) }
        core.isMonitored.store(true, ordering: .relaxed)
        // A callout may be running already: look now.
        bell.ring()
    }

    func detach(from core: ThreadCore) {
        watches.withLock { $0.removeAll { $0.core === core || $0.core == nil } }
        let remaining = core.monitors.withLock { monitors -> Int in
            monitors.removeAll { $0 === self }
            return monitors.count
        }
        if remaining == 0 { core.isMonitored.store(false, ordering: .relaxed) }
    }

    func watchedCores() -> [ThreadCore] {
        watches.withLock { $0.compactMap(\.core) }
    }

    /// A watched thread's loop thread, right after it recorded a callout's start.
    func threadBecameBusy() {
        if idle.load(ordering: .sequentiallyConsistent), idle.exchange(false, ordering: .sequentiallyConsistent) {
            bell.ring()
        }
    }

    func stop() {
        running.store(false, ordering: .sequentiallyConsistent)
        bell.ring()
    }

    /// The monitor's thread.
    func run() {
        PosixThread.setCurrentName(StallMonitor.threadName)
        while running.load(ordering: .sequentiallyConsistent) {
            let seen = bell.value
            var next = scan()
            if next == nil {
                // Announce the idle sleep, then look once more: a callout that began before the
                // announcement is seen here, one after it rings (a sequentially consistent pair
                // with ThreadCore.beginCallout).
                idle.store(true, ordering: .sequentiallyConsistent)
                next = scan()
                if next != nil { idle.store(false, ordering: .sequentiallyConsistent) }
            }
            if let next {
                let now = CLongThreadsShims_monotonicNanoseconds()
                bell.wait(seen: seen, timeoutNanoseconds: next > now ? Int64(next - now) : 0)
            } else {
                bell.wait(seen: seen, timeoutNanoseconds: -1)
            }
        }
    }

    /// Reports stalled callouts; returns when the next running callout would cross the threshold.
    private func scan() -> UInt64? {
        let now = CLongThreadsShims_monotonicNanoseconds()
        var next: UInt64?
        let current = watches.withLock { watches in
            watches.removeAll { $0.core == nil }
            return watches
        }
        for watch in current {
            guard let core = watch.core else { continue }
            let since = core.calloutStartedAt.load(ordering: .sequentiallyConsistent)
            if since == 0 || since == watch.reportedStart { continue }
            let due = since + threshold
            if now >= due {
                watch.reportedStart = since
                report(core, runningFor: now - since)
            } else {
                next = min(next ?? due, due)
            }
        }
        return next
    }

    private func report(_ core: ThreadCore, runningFor nanoseconds: UInt64) {
        let report = StallMonitor.Report(
            threadName: core.name,
            label: core.currentLabel.withLock { $0 },
            duration: .nanoseconds(nanoseconds)
        )
        core.instrument?.record(.stall(report))
        handler(report)
    }
}

/// A counter a thread sleeps on until it changes (a futex).
final class Doorbell: @unchecked Sendable {
    private let storage: UnsafeMutablePointer<CLongThreadsShims_Doorbell>

    init() {
        storage = .allocate(capacity: 1)
        storage.initialize(to: CLongThreadsShims_Doorbell(value: 0))
    }

    deinit { storage.deallocate() }

    var value: UInt32 { CLongThreadsShims_doorbellValue(storage) }
    func ring() { CLongThreadsShims_doorbellRing(storage) }
    func wait(seen: UInt32, timeoutNanoseconds: Int64) {
        CLongThreadsShims_doorbellWait(storage, seen, timeoutNanoseconds)
    }
}
