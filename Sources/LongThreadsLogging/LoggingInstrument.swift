import Logging
import LongThreads

/// Logs a LongThread's lifecycle and stalls through the application's swift-log `Logger`.
///
/// ```swift
/// let db = try LongThread(name: "db", options: .init(instrument: LoggingInstrument(logger: logger)))
/// ```
///
/// | Event | Level | Message | Metadata |
/// |---|---|---|---|
/// | start | `lifecycleLevel` (info) | `LongThread started` | `longthread.name` |
/// | stop requested | `lifecycleLevel` | `LongThread stop requested` | `longthread.name`, `longthread.pending` (`drain`/`discard`) |
/// | stopped | `lifecycleLevel` | `LongThread stopped` | `longthread.name`, `longthread.tasks.run`, `longthread.tasks.discarded` |
/// | slow dispatch | `stallLevel` (warning) | `LongThread stalled` | `longthread.name`, `longthread.task.label`, `longthread.stall.ms` (how long it has run), `longthread.queue.depth`, `longthread.stack` (the stalled thread's frames, innermost first) with `longthread.stack.source` (how it was taken: `taken with a signal`, or `read from the kernel's wait record, not interrupted`) or `longthread.stack.note` (why there is none), and `longthread.kernel.wait` (the system call and wait channel of a thread asleep in the kernel) |
/// | slow delivery | `stallLevel` | `LongThread delivered late` | `longthread.name`, `longthread.task.label`, `longthread.stall.ms` (how long it waited), `longthread.queue.depth` |
///
/// Messages are constant and the facts are metadata, so log pipelines can filter and aggregate
/// them. Per-drain and per-wake-up events are not logged (they are what `LongThreadsMetrics`
/// counts): logging stays off the thread's hot path, whatever the log level.
///
/// - Threading: `record` runs on the thread that reports the event: the LongThread for start
///   and stopped, the caller of `stop` for stop requested, the stall monitor's thread for stalls.
///   Each is rare (a few per thread's life, one per stall).
public struct LoggingInstrument: LongThreadInstrument {
    /// The application's logger; the instrument only adds metadata to each record.
    public var logger: Logger
    /// The level of start, stop-requested and stopped records.
    public var lifecycleLevel: Logger.Level
    /// The level of stall reports.
    public var stallLevel: Logger.Level

    /// Logs to `logger`, which the application configured (libraries take a logger, never build one).
    ///
    /// - Callable from: anywhere.
    public init(logger: Logger, lifecycleLevel: Logger.Level = .info, stallLevel: Logger.Level = .warning) {
        self.logger = logger
        self.lifecycleLevel = lifecycleLevel
        self.stallLevel = stallLevel
    }

    /// Logs one event, if it is one this instrument logs.
    ///
    /// - Callable from: the thread that reports `event` (see `LongThreadEvent`).
    public func record(_ event: LongThreadEvent) {
        switch event {
        case .started(let name):
            logger.log(level: lifecycleLevel, "LongThread started", metadata: ["longthread.name": Self.value(name)])
        case .stopRequested(let name, let pending):
            logger.log(level: lifecycleLevel, "LongThread stop requested", metadata: [
                "longthread.name": Self.value(name),
                "longthread.pending": pending == .drain ? "drain" : "discard",
            ])
        case .stopped(let name, let tasksRun, let discarded):
            logger.log(level: lifecycleLevel, "LongThread stopped", metadata: [
                "longthread.name": Self.value(name),
                "longthread.tasks.run": "\(tasksRun)",
                "longthread.tasks.discarded": "\(discarded)",
            ])
        case .stall(let report):
            let (seconds, attoseconds) = report.duration.components
            let millis = seconds * 1000 + attoseconds / 1_000_000_000_000_000
            var metadata: Logger.Metadata = [
                "longthread.name": Self.value(report.threadName),
                "longthread.stall.ms": "\(millis)",
                "longthread.queue.depth": "\(report.queueDepth)",
            ]
            if let label = report.label { metadata["longthread.task.label"] = "\(label)" }
            // The stalled thread's own stack, innermost first: where the work is stuck.
            if !report.stack.isEmpty {
                metadata["longthread.stack"] = .array(report.stack.map { .string($0.description) })
                metadata["longthread.stack.source"] = "\(report.stackSource)"
            }
            if let note = report.stackNote { metadata["longthread.stack.note"] = "\(note)" }
            // What a thread asleep in a system call waits in, beside the stack walked from it.
            if let wait = report.kernelWait { metadata["longthread.kernel.wait"] = "\(wait)" }
            switch report.kind {
            case .slowDispatch: logger.log(level: stallLevel, "LongThread stalled", metadata: metadata)
            case .slowDelivery: logger.log(level: stallLevel, "LongThread delivered late", metadata: metadata)
            }
        case .batch, .wokeUp:
            break
        }
    }

    private static func value(_ name: String?) -> Logger.MetadataValue {
        .string(name ?? "(unnamed)")
    }
}
