import CLongThreadsShims
import Glibc
import Synchronization

/// Reports when one callout on a LongThread — a task or a timer — runs longer than a threshold:
/// the lag monitor of the seeds, which watches run-loop activities to catch a stuck thread.
///
/// One monitor serves many threads, with one thread of its own (``threadName``). While every
/// watched thread is idle the monitor sleeps with no timeout and costs no CPU; when a watched
/// thread starts a callout it wakes the monitor once, and the monitor then sleeps until the
/// earliest moment any running callout would cross the threshold. A stall is reported once per
/// callout, within the threshold plus the monitor's wake-up latency (well under twice the
/// threshold), to `handler` on the monitor's thread, and to the stalled thread's instrument.
///
/// A callout is the time from `afterWaiting` or `beforeSources` to the next `beforeTimers`,
/// `beforeWaiting` or `exit` in the thread's common modes. A task running the loop nested in a
/// custom mode counts as one long callout.
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
        /// Symbolic frames of the stalled thread, when captured (currently never, see the type).
        public var backtrace: [String]

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
    private let state: MonitorState
    private let thread: pthread_t

    /// Starts a monitor (and its thread) that reports callouts running longer than `threshold`.
    ///
    /// - Parameter handler: Called on the monitor's thread, once per stalled callout. Keep it short:
    ///   while it runs, other stalls wait.
    /// - Throws: ``LongThreadError/cannotStart(errno:)`` if its thread cannot be created.
    /// - Precondition: `threshold` is positive.
    public init(threshold: Duration, handler: @escaping @Sendable (Report) -> Void) throws(LongThreadError) {
        precondition(threshold > .zero, "StallMonitor needs a positive threshold, got \(threshold)")
        self.threshold = threshold
        let state = MonitorState(threshold: UInt64(threshold.clampedNanoseconds), handler: handler)
        self.state = state
        thread = try PosixThread.spawn(options: .init()) { state.run() }
    }

    /// Stops watching every thread, stops the monitor and joins its thread.
    deinit {
        let watches = state.watches.withLock { watches in
            defer { watches = [] }
            return watches
        }
        for watch in watches { watch.cancel() }
        state.stop()
        if pthread_equal(thread, pthread_self()) != 0 {
            pthread_detach(thread) // the handler dropped the last reference, on the monitor's thread
        } else {
            pthread_join(thread, nil)
        }
    }

    /// Watches `thread` until it stops (or the monitor goes).
    ///
    /// - Throws: ``LongThreadError/stopped`` if the thread has begun stopping.
    /// - Callable from: any thread.
    public func watch(_ thread: LongThread) throws(LongThreadError) {
        let watch = Watch(core: thread.core, monitor: state)
        let item = EngineItem.observer(activities: Watch.activities, order: .min + 1) { [weak watch] activity in
            watch?.observe(activity)
        }
        watch.engineItem = item
        try thread.core.register(watch, item: item, modes: [.common])
        state.watches.withLock { $0.append(watch) }
    }

    /// Stops watching `thread`.
    /// - Callable from: any thread.
    public func unwatch(_ thread: LongThread) {
        let removed = state.watches.withLock { watches -> [Watch] in
            let removed = watches.filter { $0.core === thread.core }
            watches.removeAll { $0.core === thread.core }
            return removed
        }
        for watch in removed { watch.cancel() }
    }
}

/// What the monitor's thread and the watched threads share.
private final class MonitorState: Sendable {
    let threshold: UInt64
    let handler: @Sendable (StallMonitor.Report) -> Void
    let watches = Locked<[Watch]>([])
    let bell = Doorbell()
    /// True while the monitor sleeps with no timeout: the next thread to start a callout rings.
    let idle = Atomic<Bool>(false)
    let running = Atomic<Bool>(true)

    init(threshold: UInt64, handler: @escaping @Sendable (StallMonitor.Report) -> Void) {
        self.threshold = threshold
        self.handler = handler
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
                // Announce the idle sleep, then look once more: a thread that went busy before the
                // announcement is seen here, one after it rings (sequentially consistent pair).
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
            let since = watch.busySince.load(ordering: .sequentiallyConsistent)
            if since == 0 || since == watch.reportedStart { continue }
            let due = since + threshold
            if now >= due {
                watch.reportedStart = since
                report(watch, runningFor: now - since)
            } else {
                next = min(next ?? due, due)
            }
        }
        return next
    }

    private func report(_ watch: Watch, runningFor nanoseconds: UInt64) {
        guard let core = watch.core else { return }
        let report = StallMonitor.Report(
            threadName: core.name,
            label: core.currentLabel.withLock { $0 },
            duration: .nanoseconds(nanoseconds),
            backtrace: []
        )
        core.instrument?.record(.stall(report))
        handler(report)
    }
}

/// One watched thread: its observer marks callouts busy or idle.
private final class Watch: LoopAttachment, @unchecked Sendable {
    static let activities = RunLoopActivity([.afterWaiting, .beforeSources, .beforeTimers, .beforeWaiting, .exit]).rawValue

    // MARK: Immutable
    weak var core: ThreadCore?
    /// Strong: an observer callout may still run while the monitor goes away.
    let monitor: MonitorState
    // MARK: Written once before the observer is added (the thread's lock orders it)
    var engineItem: EngineItem?
    // MARK: Written by the watched thread, read by the monitor
    /// When the running callout began (monotonic ns), or 0 while idle.
    let busySince = Atomic<UInt64>(0)
    // MARK: Monitor thread only
    /// The `busySince` of the last callout reported, so each is reported once.
    var reportedStart: UInt64 = 0

    init(core: ThreadCore, monitor: MonitorState) {
        self.core = core
        self.monitor = monitor
    }

    /// Watched thread only.
    func observe(_ activity: UInt) {
        let activity = RunLoopActivity(rawValue: activity)
        if activity.contains(.afterWaiting) || activity.contains(.beforeSources) {
            busySince.store(CLongThreadsShims_monotonicNanoseconds(), ordering: .sequentiallyConsistent)
            if monitor.idle.load(ordering: .sequentiallyConsistent),
               monitor.idle.exchange(false, ordering: .sequentiallyConsistent) {
                monitor.bell.ring()
            }
        } else {
            busySince.store(0, ordering: .relaxed)
        }
    }

    func cancel() {
        engineItem?.invalidate()
        core?.itemEnded(self)
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
