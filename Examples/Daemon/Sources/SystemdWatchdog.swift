import ExampleSupport
import Glibc
import Logging
import LongThreads
import ServiceLifecycle
import Synchronization

/// Keeps systemd informed (see ``SystemdNotifier``) and pings its watchdog only while every
/// watched LongThread makes progress.
///
/// How "stalled" is decided: every watchdog period (half of `WATCHDOG_USEC`, as sd_watchdog_enabled(3)
/// advises) a heartbeat item is posted to each watched thread, and `WATCHDOG=1` is sent only if
/// every heartbeat posted one period earlier has run. That is progress, not liveness: a thread
/// stuck in one callout (a hung `fsync`, a deadlock), a loop that no longer serves its queue, or a
/// backlog that takes longer than a period to drain all withhold the ping, and systemd restarts
/// the daemon once `WatchdogSec` passes without one. A thread already found stuck gets no second
/// heartbeat until its first one ran, so a stuck thread does not collect them.
///
/// The ``StallMonitor`` says why, first: its threshold is at most one period, and a thread stuck
/// right after a ping is found stuck at the second tick after it, while systemd waits two periods
/// after the last ping; so the stall report (logged by each thread's `LoggingInstrument`) is in
/// the log before systemd acts.
final class SystemdWatchdog: Service, Sendable {
    private let threads: [LongThread]
    /// The stall monitor's threshold: as asked, but at most one watchdog period.
    let stallThreshold: Duration
    /// Half of systemd's watchdog timeout; nil without a watchdog (then nothing ticks).
    let period: Duration?
    private let serving: String
    private let status: @Sendable () -> String
    private let onStopping: @Sendable () -> Void
    private let logger: Logger
    /// The last stall reported, for `STATUS=`.
    private let lastStall = Protected<StallMonitor.Report?>(nil)

    /// - Parameters:
    ///   - threads: The threads whose progress the watchdog's pings vouch for.
    ///   - stallThreshold: The longest callout not reported as a stall (capped at one period).
    ///   - serving: What the daemon serves, for the ready message.
    ///   - status: A short account of the daemon's state, for `STATUS=`; called on each tick.
    ///   - onStopping: Called when the graceful shutdown reaches this service.
    init(
        watching threads: [LongThread],
        stallThreshold: Duration,
        serving: String,
        status: @escaping @Sendable () -> String,
        onStopping: @escaping @Sendable () -> Void,
        logger: Logger
    ) {
        self.threads = threads
        period = SystemdNotifier.watchdogTimeout.map { $0 / 2 }
        self.stallThreshold = period.map { min(stallThreshold, $0) } ?? stallThreshold
        self.serving = serving
        self.status = status
        self.onStopping = onStopping
        self.logger = logger
    }

    /// A stall monitor watching every thread; keep it as long as the threads run.
    func startMonitor() throws(LongThreadError) -> StallMonitor {
        let monitor = try StallMonitor(threshold: stallThreshold) { [lastStall] report in
            lastStall.withLock { $0 = report }
        }
        for thread in threads { monitor.watch(thread) }
        return monitor
    }

    /// Says `READY=1`, pings the watchdog each period while the threads progress, and says
    /// `STOPPING=1` when the graceful shutdown reaches it.
    func run() async throws {
        SystemdNotifier.notify(["READY=1", "STATUS=serving \(serving): \(status())"])
        var metadata: Logger.Metadata = ["pid": "\(getpid())", "stall.threshold": "\(stallThreshold)"]
        if let period { metadata["watchdog.period"] = "\(period)" }
        logger.info("ready: pid \(getpid()), serving \(serving)", metadata: metadata)
        if let period {
            let threads = threads
            try? await cancelWhenGracefulShutdown { [self] in
                var heartbeats = threads.map { Heartbeat(thread: $0) }
                for heartbeat in heartbeats { heartbeat.post() }
                while true {
                    try await Task.sleep(for: period)
                    tick(&heartbeats, period: period)
                }
            }
        } else {
            try? await gracefulShutdown()
        }
        onStopping()
        SystemdNotifier.notify(["STOPPING=1", "STATUS=stopping: answering the last requests; \(status())"])
        logger.info("stopping: answering the last requests")
    }

    /// One period has passed: ping if every heartbeat ran, and post the next ones.
    private func tick(_ heartbeats: inout [Heartbeat], period: Duration) {
        let stuck = heartbeats.filter { !$0.ran }
        if stuck.isEmpty {
            SystemdNotifier.notify(["WATCHDOG=1", "STATUS=serving \(serving): \(status())"])
        } else {
            let names = stuck.map { $0.thread.name ?? "(unnamed)" }.joined(separator: ", ")
            let stall = lastStall.withLock { $0 }.map { "; last stall: \($0)" } ?? ""
            SystemdNotifier.notify(["STATUS=stalled: \(names) made no progress\(stall)"])
            for heartbeat in stuck where !heartbeat.reported {
                heartbeat.reported = true
                logger.error("watchdog: no progress on a daemon thread; withholding WATCHDOG=1 (systemd restarts the daemon after WatchdogSec)", metadata: [
                    "longthread.name": "\(heartbeat.thread.name ?? "(unnamed)")",
                    "heartbeat.age": "\(ContinuousClock.now - heartbeat.postedAt)",
                ])
            }
        }
        for heartbeat in heartbeats where heartbeat.ran {
            if heartbeat.reported {
                heartbeat.reported = false
                logger.notice("watchdog: the daemon thread progresses again", metadata: ["longthread.name": "\(heartbeat.thread.name ?? "(unnamed)")"])
            }
            heartbeat.post()
        }
    }
}

/// One watched thread's heartbeat. `ran` is set on the thread; the rest belongs to the
/// watchdog's loop.
private final class Heartbeat: @unchecked Sendable {
    let thread: LongThread
    private let ranFlag = Atomic<Bool>(false)
    // The watchdog's loop only.
    var postedAt = ContinuousClock.now
    var reported = false

    init(thread: LongThread) { self.thread = thread }

    var ran: Bool { ranFlag.load(ordering: .acquiring) }

    /// Queues the next heartbeat; a thread that refuses work (it stopped) counts as stuck.
    func post() {
        ranFlag.store(false, ordering: .relaxed)
        postedAt = .now
        try? thread.perform(label: "watchdog heartbeat") { [self] in ranFlag.store(true, ordering: .releasing) }
    }
}
