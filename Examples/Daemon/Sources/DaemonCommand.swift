import ArgumentParser
import Logging

/// `longthread-daemon`'s command line, parsed by swift-argument-parser: `--help`, `--version`,
/// errors on standard error and exit code 64 (`EX_USAGE`) for bad usage.
///
/// Every bound on a client is an option, so an operator can tighten it without a rebuild; the
/// defaults suit a local service with a handful of well-behaved clients.
public struct DaemonCommand: AsyncParsableCommand {
    /// The example's version, shown by `--version`.
    public static let version = "0.2.0"

    /// The command's name, help text and version.
    public static let configuration = CommandConfiguration(
        commandName: "longthread-daemon",
        abstract: "Serves line requests against an append-only journal kept on one LongThread.",
        discussion: """
        Requests, one per line, one reply line each, in order:
          APPEND <text>  append a record, fsync it, reply OK <sequence number>
          COUNT          reply OK <number of records>
          PING           reply OK PONG

        SIGTERM or SIGINT: stop accepting, answer what was accepted (cutting
        clients still unanswered at the shutdown deadline), flush, exit 0.

        Under systemd (Type=notify): READY=1, STATUS=, STOPPING=1, and
        WATCHDOG=1 while every daemon thread makes progress.
        """,
        version: version
    )

    /// The Unix-domain socket to listen on, if any.
    @Option(help: ArgumentHelp("The Unix-domain socket to listen on.", valueName: "path"))
    public var socket: String?

    /// Whether to serve requests read from standard input (replies go to standard output).
    @Flag(help: "Serve requests from standard input, replies on standard output; alone, it serves until end of input.")
    public var stdin = false

    /// The journal file: append-only, one record per line.
    @Option(help: ArgumentHelp("The journal file (created if missing).", valueName: "path"))
    public var journal: String

    /// The pidfile (libbsd pidfile(3)); nil runs without one.
    @Option(help: ArgumentHelp("A pidfile, locked while the daemon runs: a second instance refuses to start.", valueName: "path"))
    public var pidfile: String?

    /// A client that sends no complete request and reads nothing for this long is closed; 0 never
    /// closes one.
    @Option(help: ArgumentHelp("Close a client idle this long (no complete request sent, no reply read); 0: never.", valueName: "seconds"))
    public var idleTimeout: Seconds = .init(300)

    /// The high watermark: a client whose unsent replies exceed this many bytes is not read
    /// until they are down to half of it.
    @Option(help: ArgumentHelp("Stop reading a client whose unsent replies exceed this many bytes, until they are down to half.", valueName: "bytes"))
    public var maxReplyBuffer = 1 << 20

    /// A client with replies waiting that takes none of them for this long is cut; 0 never cuts one.
    @Option(help: ArgumentHelp("Cut a client that takes none of its waiting replies for this long; 0: never.", valueName: "seconds"))
    public var sendTimeout: Seconds = .init(30)

    /// A request line must end within this long of its first byte, or its client is cut; 0: no bound.
    @Option(help: ArgumentHelp("Cut a client whose request line does not end within this long of its first byte; 0: never.", valueName: "seconds"))
    public var requestTimeout: Seconds = .init(10)

    /// Clients served at once; one more is refused with an `ERR` line.
    @Option(help: ArgumentHelp("Serve at most this many clients at once; one more is told ERR too many clients and closed.", valueName: "count"))
    public var maxClients = 256

    /// Memory held for all clients together (requests read, batches in flight, unsent replies);
    /// at the limit, the clients holding the most are cut, or the one being read waits.
    @Option(help: ArgumentHelp("Hold at most this many bytes for all clients together (requests read, batches in flight, unsent replies); at the limit, cut the clients holding the most.", valueName: "bytes"))
    public var maxTotalReplyBuffer = 64 << 20

    /// After SIGTERM, replies still unsent after this long are dropped and their clients cut.
    @Option(help: ArgumentHelp("On SIGTERM, cut clients whose replies are still unsent after this long.", valueName: "seconds"))
    public var shutdownTimeout: Seconds = .init(5)

    /// A callout on a daemon thread running longer than this is logged as a stall.
    @Option(help: ArgumentHelp("Log a stall when a daemon thread runs one callout longer than this (at most half the systemd watchdog period is used).", valueName: "seconds"))
    public var stallThreshold: Seconds = .init(1)

    /// The lowest level logged (to standard error).
    @Option(help: "The lowest level logged to standard error.")
    public var logLevel: LogLevel = .info

    /// For tests and demonstrations: accept `STALL <ms>`, which blocks the journal thread.
    @Flag(name: .customLong("debug-stall-requests"), help: .private)
    public var debugStallRequests = false

    /// An empty command line; ArgumentParser fills the properties.
    public init() {}

    /// Checks what the option types alone cannot.
    public func validate() throws {
        guard socket != nil || stdin else { throw ValidationError("Give --socket <path>, --stdin, or both.") }
        guard maxReplyBuffer > 0 else { throw ValidationError("--max-reply-buffer must be at least 1 byte.") }
        guard maxClients > 0 else { throw ValidationError("--max-clients must be at least 1.") }
        guard maxTotalReplyBuffer >= Self.minimumTotal else {
            throw ValidationError("--max-total-reply-buffer must be at least \(Self.minimumTotal) bytes (one read and one batch).")
        }
        guard stallThreshold.duration > .zero else { throw ValidationError("--stall-threshold must be more than 0 seconds.") }
    }

    /// Runs the daemon until SIGTERM/SIGINT (or end of input, when standard input is its only
    /// source); ArgumentParser exits 0 when it returns. Exits 1 if it cannot start.
    public func run() async throws {
        var handler = StreamLogHandler.standardError(label: "longthread-daemon")
        handler.logLevel = logLevel.level
        LoggingSystem.bootstrap { [handler] _ in handler }
        let logger = Logger(label: "longthread-daemon")
        do {
            try await Daemon(configuration: self, logger: logger).run()
        } catch let error as DaemonError {
            logger.critical("cannot start: \(error)")
            throw ExitCode.failure
        }
    }

    /// The smallest total that lets one client be read and its batch parsed.
    static var minimumTotal: Int { ClientLimits.batchReserve }

    /// What the bounds and the watchdog need, as durations.
    var limits: ClientLimits {
        ClientLimits(
            idleTimeout: idleTimeout.duration == .zero ? nil : idleTimeout.duration,
            replyBufferBytes: maxReplyBuffer,
            shutdownDeadline: shutdownTimeout.duration,
            maximumClients: maxClients,
            totalReplyBufferBytes: maxTotalReplyBuffer,
            sendTimeout: sendTimeout.duration == .zero ? nil : sendTimeout.duration,
            requestTimeout: requestTimeout.duration == .zero ? nil : requestTimeout.duration
        )
    }
}

/// A duration on the command line, in seconds, fractions allowed: `1.5`, `0.25`, `30`.
public struct Seconds: ExpressibleByArgument, Sendable, Equatable, CustomStringConvertible {
    /// The duration given.
    public var duration: Duration
    private var text: String

    /// `seconds` seconds.
    public init(_ seconds: Int) {
        duration = .seconds(seconds)
        text = "\(seconds)"
    }

    /// Parses a non-negative decimal number of seconds, up to a year.
    public init?(argument: String) {
        guard let value = Double(argument), value.isFinite, value >= 0, value <= 366 * 86_400 else { return nil }
        duration = .nanoseconds(Int64((value * 1e9).rounded()))
        text = argument
    }

    /// As given, for help's `(default: …)`.
    public var description: String { text }
}

/// swift-log's levels, as the command line spells them.
public enum LogLevel: String, ExpressibleByArgument, CaseIterable, Sendable {
    case trace, debug, info, notice, warning, error, critical

    var level: Logger.Level { Logger.Level(rawValue: rawValue) ?? .info }
}
