import CSystemd
import Glibc

/// libsystemd's sd_notify(3) protocol, for a `Type=notify` service: the daemon tells systemd
/// when it is ready (`READY=1`), what it is doing (`STATUS=`), that it is stopping
/// (`STOPPING=1`), and that it is alive (`WATCHDOG=1`).
///
/// Outside systemd (no `NOTIFY_SOCKET` in the environment) every call does nothing. libsystemd
/// is used rather than a hand-written datagram: it handles abstract and path sockets, and its
/// `sd_watchdog_enabled` checks `WATCHDOG_PID`, so a child that inherited the variables does
/// not ping for its parent.
enum SystemdNotifier {
    /// Sends the assignments (`"READY=1"`, `"STATUS=serving"`, …) as one message.
    ///
    /// - Returns: false if systemd asked for messages and this one could not be sent.
    /// - Callable from: any thread (each call opens its own socket).
    @discardableResult
    static func notify(_ assignments: [String]) -> Bool {
        sd_notify(0, assignments.joined(separator: "\n")) >= 0
    }

    /// systemd's watchdog timeout for this process (`WATCHDOG_USEC`, when `WATCHDOG_PID` is
    /// unset or names this process), or nil when no watchdog is armed.
    static var watchdogTimeout: Duration? {
        var microseconds: UInt64 = 0
        guard sd_watchdog_enabled(0, &microseconds) > 0, microseconds > 0 else { return nil }
        return .microseconds(Int64(clamping: microseconds))
    }
}
