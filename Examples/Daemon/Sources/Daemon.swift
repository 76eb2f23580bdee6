import Glibc
import Logging
import LongThreads
import LongThreadsLogging
import LongThreadsServiceLifecycle
import ServiceLifecycle

/// `longthread-daemon`: a small Linux daemon built on LongThread and the server ecosystem's
/// packages.
///
/// - `daemon.journal` owns the journal file (a resource that must only be used from one thread)
///   and the process title; every request is serialized onto it. It runs as a
///   `LongThreadService`: a graceful shutdown drains what it accepted, then ends it.
/// - `daemon.io` accepts clients on a Unix-domain socket and reads their requests through
///   descriptor sources (``SocketServer``), bounding each client (idle timeout, reply buffer,
///   shutdown deadline).
/// - A `ServiceGroup` owns the lifecycle: SIGTERM/SIGINT start a graceful shutdown, which visits
///   the services in reverse order: standard input stops being read, the systemd notifier says
///   `STOPPING=1`, the socket server stops accepting and answers (or cuts) its clients, and
///   last the journal drains.
/// - swift-log's `Logger` gets every diagnostic, the LongThreads' own events included (through
///   `LoggingInstrument`), and a `StallMonitor` watches both threads for the systemd watchdog.
struct Daemon {
    let configuration: DaemonCommand
    let logger: Logger

    /// Starts everything, serves until the group shuts down, then closes the journal.
    ///
    /// - Throws: ``DaemonError`` when it cannot start (its threads stop as they are released),
    ///   or what the service group threw. The pidfile is removed either way.
    func run() async throws {
        ProcessTitle.prepare()
        let pidfile = try PidFile(configuration.pidfile)
        defer { pidfile.remove() }
        let threadOptions = LongThread.Options(instrument: LoggingInstrument(logger: logger))
        let journal: Journal
        let server: SocketServer?
        do {
            journal = try Journal(path: configuration.journal, options: threadOptions, allowsStall: configuration.debugStallRequests)
            server = try configuration.socket.map { path in
                try SocketServer(path: path, journal: journal, limits: configuration.limits, options: threadOptions, logger: logger)
            }
        } catch {
            throw error as? DaemonError ?? .system("\(error)", errno: 0)
        }

        var sources: [String] = []
        if let path = configuration.socket { sources.append("socket \(path)") }
        if configuration.stdin { sources.append("stdin") }
        let watchdog = SystemdWatchdog(
            watching: [journal.thread] + (server.map { [$0.io] } ?? []),
            stallThreshold: configuration.stallThreshold.duration,
            serving: sources.joined(separator: " and "),
            status: { "\(server?.clientCount ?? 0) clients, \(journal.recordCount) records" },
            onStopping: { journal.show("draining") },
            logger: logger
        )
        let monitor: StallMonitor
        do {
            monitor = try watchdog.startMonitor()
        } catch {
            throw DaemonError.system("cannot start the stall monitor: \(error)", errno: 0)
        }

        // Started in this order, shut down in the reverse one (see the type's comment).
        var services: [ServiceGroupConfiguration.ServiceConfiguration] = [.init(service: LongThreadService(journal.thread))]
        if let server { services.append(.init(service: server)) }
        services.append(.init(service: watchdog))
        if configuration.stdin {
            // Standard input alone: its end is the end of the work. With a socket, the daemon
            // serves on until a signal.
            let stopsAtEnd = configuration.socket == nil
            services.append(.init(
                service: StdinService(journal: journal, stopsAtEnd: stopsAtEnd),
                successTerminationBehavior: stopsAtEnd ? .gracefullyShutdownGroup : .ignore
            ))
        }
        var group = ServiceGroupConfiguration(services: services, logger: logger)
        group.gracefulShutdownSignals = [.sigterm, .sigint]

        pidfile.write()
        journal.show("serving")
        try await ServiceGroup(configuration: group).run()

        // Every service returned: the journal's thread has drained and ended.
        withExtendedLifetime(monitor) {}
        let records = journal.finish()
        logger.info("stopped: every accepted request answered; \(records) records in \(configuration.journal)")
    }
}
