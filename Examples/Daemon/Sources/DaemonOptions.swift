import Glibc

/// The daemon's command line.
public struct DaemonOptions: Sendable, Equatable {
    /// The Unix-domain socket to listen on, if any.
    public var socketPath: String?
    /// Whether to serve requests read from standard input (replies go to standard output).
    public var serveStdin = false
    /// The journal file: append-only, one record per line.
    public var journalPath: String
    /// The pidfile (libbsd pidfile(3)); nil runs without one.
    public var pidfilePath: String?

    public static let usage = """
    usage: longthread-daemon --journal PATH [--socket PATH] [--stdin] [--pidfile PATH]

    Serves line requests on a Unix-domain socket and/or standard input, one reply line each:
      APPEND <text>   appends a record to the journal, fsyncs it, replies OK <sequence number>
      COUNT           replies OK <number of records>
      PING            replies OK PONG
    SIGTERM or SIGINT: stop accepting, answer what was accepted, flush, exit 0.
    """

    /// Parses `arguments` (without the program name).
    public init(arguments: [String]) throws(DaemonError) {
        var socketPath: String?
        var journalPath: String?
        var pidfilePath: String?
        var serveStdin = false
        var rest = arguments[...]
        func value(for option: String) throws(DaemonError) -> String {
            guard let value = rest.popFirst(), !value.hasPrefix("--") else { throw .usage("\(option) needs a path") }
            return value
        }
        while let argument = rest.popFirst() {
            switch argument {
            case "--socket": socketPath = try value(for: argument)
            case "--journal": journalPath = try value(for: argument)
            case "--pidfile": pidfilePath = try value(for: argument)
            case "--stdin": serveStdin = true
            case "--help", "-h": throw .help
            default: throw .usage("unknown argument \(argument)")
            }
        }
        guard let journalPath else { throw .usage("--journal is required") }
        guard socketPath != nil || serveStdin else { throw .usage("give --socket PATH, --stdin, or both") }
        self.socketPath = socketPath
        self.serveStdin = serveStdin
        self.journalPath = journalPath
        self.pidfilePath = pidfilePath
    }
}

/// Why the daemon could not start.
public enum DaemonError: Error, Equatable, CustomStringConvertible {
    case help
    case usage(String)
    /// Another instance holds the pidfile.
    case alreadyRunning(pid: Int32?, pidfile: String)
    case system(String, errno: Int32)

    public var description: String {
        switch self {
        case .help: return DaemonOptions.usage
        case .usage(let message): return "\(message)\n\(DaemonOptions.usage)"
        case .alreadyRunning(let pid, let pidfile):
            return "already running" + (pid.map { " as pid \($0)" } ?? "") + " (pidfile \(pidfile) is locked); not starting twice"
        case .system(let what, let errno): return "\(what): \(String(cString: strerror(errno)))"
        }
    }
}
