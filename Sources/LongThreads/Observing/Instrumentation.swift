/// What a LongThread reports to an instrument: its lifecycle, each drain, each wake-up, stalls.
///
/// The logging and metrics integrations (`LongThreadsLogging`, `LongThreadsMetrics`) turn these into
/// log records and metrics; tests can record them.
public enum LongThreadEvent: Sendable {
    /// The thread's run loop is ready and about to run (after `Options.setUp`). Reported on the
    /// thread, before its creator's `init` returns.
    case started(name: String?)
    /// A stop began (or a draining stop turned into a discarding one). Reported on the caller of `stop`.
    case stopRequested(name: String?, pending: LongThread.PendingWork)
    /// The loop exited: `tasksRun` items ran in the thread's life, `discarded` were dropped unrun.
    /// Reported on the thread, its last act before it ends.
    case stopped(name: String?, tasksRun: Int, discarded: Int)
    /// A drain ended: it ran `tasks` items in `busy`; the longest any of them waited from its post
    /// to its start was `waited`; `queueDepth` items were waiting when it ended (queued, or taken
    /// into the batch and not yet run). Reported on the thread.
    case batch(name: String?, tasks: Int, busy: Duration, waited: Duration, queueDepth: Int)
    /// The loop woke from sleep. Reported on the thread.
    case wokeUp(name: String?)
    /// A stall monitor caught one callout running longer than its threshold. Reported on the
    /// monitor's thread.
    case stall(StallMonitor.Report)
}

/// Receives a thread's ``LongThreadEvent``s: set one in ``LongThread/Options/instrument``.
///
/// - Threading: `record` is called on the thread the event names (see each case), so it must be
///   cheap and must not block: it runs inside the thread's run loop. With no instrument set, the
///   thread pays nothing for these events beyond one nil check per drain. With one set, each post
///   and each item's start read the monotonic clock (for `waited` and
///   ``LongThread/Statistics/oldestPendingAge``).
public protocol LongThreadInstrument: Sendable {
    /// Records one event. Called on the thread noted by the event's case.
    func record(_ event: LongThreadEvent)
}

/// Several instruments as one, like swift-log's `MultiplexLogHandler`: each event goes to every
/// instrument, in the order given. Use it to log and measure the same thread.
///
/// - Threading: as ``LongThreadInstrument``: `record` runs on the thread the event names and calls
///   each instrument there in turn, so their costs add up.
public struct MultiplexInstrument: LongThreadInstrument {
    /// The instruments, in the order they receive each event.
    public let instruments: [any LongThreadInstrument]

    /// Combines `instruments`, which receive each event in this order.
    public init(_ instruments: [any LongThreadInstrument]) {
        self.instruments = instruments
    }

    /// Combines `instruments`, which receive each event in this order.
    public init(_ instruments: any LongThreadInstrument...) {
        self.init(instruments)
    }

    /// Passes `event` to every instrument, in order.
    public func record(_ event: LongThreadEvent) {
        for instrument in instruments { instrument.record(event) }
    }
}
