import LongThreads
import Metrics

/// Turns a LongThread's events into swift-metrics metrics: queue depth, tasks run, task latency,
/// wake-ups, busy time, discarded tasks and stalls.
///
/// ```swift
/// let db = try LongThread(name: "db", options: .init(instrument: MetricsInstrument(threadName: "db")))
/// ```
///
/// Every metric carries the dimension `("thread", threadName)`:
///
/// | Label | Kind | What |
/// |---|---|---|
/// | `longthread.queue.depth` | gauge | items waiting (queued or in the running batch) when a drain ended (0 once stopped) |
/// | `longthread.tasks.run` | counter | items run (work, actor jobs, timers' items) |
/// | `longthread.task.latency` | timer | per drain: the longest any of its items waited from its post to its start |
/// | `longthread.busy` | timer | per drain: time spent running its items |
/// | `longthread.wakeups` | counter | times the loop woke from sleep |
/// | `longthread.tasks.discarded` | counter | items dropped unrun, counted when the thread stopped |
/// | `longthread.stalls` | counter | callouts a `StallMonitor` caught running past its threshold |
///
/// ## Cost
/// The metric objects are made once, in `init`, with the factory given (the application's
/// `MetricsSystem.factory` by default); the thread then updates them once per drain and once per
/// wake-up, never per task. A thread with an instrument reads the monotonic clock when an item is
/// posted and when it starts (to time its wait); a thread without an instrument pays nothing.
///
/// - Threading: `record` runs on the thread that reports the event (mostly the LongThread
///   itself), so the metrics backend's handlers must be thread-safe and must not block, as
///   swift-metrics requires of every backend.
/// - Important: Use one instrument per thread: the thread's name is fixed at `init`. Two threads
///   sharing one instrument add up into the same series.
public final class MetricsInstrument: LongThreadInstrument {
    /// The `thread` dimension's value.
    public let threadName: String

    // MARK: Immutable (swift-metrics' handles are thread-safe)
    private let queueDepth: Gauge
    private let tasksRun: Counter
    private let taskLatency: Metrics.Timer
    private let busy: Metrics.Timer
    private let wakeUps: Counter
    private let discarded: Counter
    private let stalls: Counter

    /// Makes the thread's metrics with `factory`.
    ///
    /// - Parameters:
    ///   - threadName: The value of the `thread` dimension; use the thread's name.
    ///   - factory: Where the metrics go. Defaults to the bootstrapped `MetricsSystem.factory`;
    ///     tests pass a `TestMetrics`.
    /// - Callable from: any thread.
    public init(threadName: String, factory: any MetricsFactory = MetricsSystem.factory) {
        self.threadName = threadName
        let dimensions = [("thread", threadName)]
        queueDepth = Gauge(label: "longthread.queue.depth", dimensions: dimensions, factory: factory)
        tasksRun = Counter(label: "longthread.tasks.run", dimensions: dimensions, factory: factory)
        taskLatency = Metrics.Timer(label: "longthread.task.latency", dimensions: dimensions, factory: factory)
        busy = Metrics.Timer(label: "longthread.busy", dimensions: dimensions, factory: factory)
        wakeUps = Counter(label: "longthread.wakeups", dimensions: dimensions, factory: factory)
        discarded = Counter(label: "longthread.tasks.discarded", dimensions: dimensions, factory: factory)
        stalls = Counter(label: "longthread.stalls", dimensions: dimensions, factory: factory)
    }

    /// Updates the metrics for one event.
    ///
    /// - Callable from: the thread that reports `event` (see `LongThreadEvent`).
    public func record(_ event: LongThreadEvent) {
        switch event {
        case .batch(_, let tasks, let busyTime, let waited, let depth):
            tasksRun.increment(by: tasks)
            taskLatency.recordNanoseconds(waited.nanoseconds)
            busy.recordNanoseconds(busyTime.nanoseconds)
            queueDepth.record(depth)
        case .wokeUp:
            wakeUps.increment()
        case .stopped(_, _, let discardedCount):
            if discardedCount > 0 { discarded.increment(by: discardedCount) }
            queueDepth.record(0)
        case .stall:
            stalls.increment()
        case .started, .stopRequested:
            break
        }
    }
}

extension Duration {
    /// Whole nanoseconds, clamped to `Int64`.
    fileprivate var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        let (scaled, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        if overflow { return seconds < 0 ? .min : .max }
        let (total, overflow2) = scaled.addingReportingOverflow(attoseconds / 1_000_000_000)
        return overflow2 ? .max : total
    }
}
