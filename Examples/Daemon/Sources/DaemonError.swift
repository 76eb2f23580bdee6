import Glibc

/// Why the daemon could not start, or why its client failed.
public enum DaemonError: Error, Equatable, CustomStringConvertible {
    /// A value the command line or a caller gave is unusable (a socket path too long, say).
    case usage(String)
    /// Another instance holds the pidfile.
    case alreadyRunning(pid: Int32?, pidfile: String)
    /// A system call failed (errno 0: something else did, as the message says).
    case system(String, errno: Int32)

    /// One line for a log or a terminal.
    public var description: String {
        switch self {
        case .usage(let message): return message
        case .alreadyRunning(let pid, let pidfile):
            return "already running" + (pid.map { " as pid \($0)" } ?? "") + " (pidfile \(pidfile) is locked); not starting twice"
        case .system(let what, let errno): return errno == 0 ? what : "\(what): \(String(cString: strerror(errno)))"
        }
    }
}
