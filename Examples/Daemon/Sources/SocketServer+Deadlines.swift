import Logging
import LongThreads

/// daemon.io: the clients' deadlines (``ClientLimits/idleTimeout``, ``ClientLimits/requestTimeout``,
/// ``ClientLimits/sendTimeout``), all served by one timer due at the first of them; with no
/// clients there is none.
extension SocketServer {
    /// Arms the check for `connection`'s first deadline, unless one is due sooner already.
    func scheduleDeadlineCheck(for connection: Connection) {
        guard accepting, let deadline = connection.deadline(limits) else { return }
        if let check = deadlineCheck, check.at <= deadline.at { return }
        armDeadlineCheck(at: deadline.at)
    }

    func cancelDeadlineCheck() {
        deadlineCheck?.timer.cancel()
        deadlineCheck = nil
    }

    private func armDeadlineCheck(at instant: ContinuousClock.Instant) {
        cancelDeadlineCheck()
        guard let timer = try? io.perform(after: max(instant - io.now, .zero), { [self] in
            deadlineCheck = nil
            checkDeadlines()
        }) else { return } // only a stopping thread refuses the timer
        deadlineCheck = (timer, instant)
    }

    /// Closes or cuts every client past a deadline, then arms the check for the next one.
    private func checkDeadlines() {
        let now = io.now
        var next: ContinuousClock.Instant?
        for connection in Array(connections.values) {
            guard let deadline = connection.deadline(limits) else { continue }
            if deadline.at > now {
                next = min(next ?? deadline.at, deadline.at)
                continue
            }
            switch deadline.kind {
            case .idle:
                logger.notice("client closed: idle", metadata: [
                    "client.fd": "\(connection.fd)", "idle.timeout": "\(limits.idleTimeout ?? .zero)", "unsent.bytes": "\(connection.unsent)",
                ])
                drop(connection)
            case .request:
                cut(connection, "client cut: a request line did not end within the request timeout", [
                    "request.timeout": "\(limits.requestTimeout ?? .zero)", "line.bytes": "\(connection.lines.partialBytes)",
                ])
            case .send:
                cut(connection, "client cut: it took none of its replies within the send timeout", [
                    "send.timeout": "\(limits.sendTimeout ?? .zero)",
                ])
            }
        }
        if let next, accepting { armDeadlineCheck(at: next) }
    }
}
