import Foundation
import Glibc
import ServiceLifecycle
import Synchronization

/// Standard input as a request source: lines in, replies on standard output, in order.
///
/// A plain thread with blocking reads, since a regular file (`< requests.txt`) cannot be watched
/// by epoll. `run()` returns at the end of input when standard input is the daemon's only source
/// (its group then shuts down), otherwise on graceful shutdown. After a shutdown began, lines
/// still read are not submitted: they were never accepted. The reader thread may then stay
/// blocked in `read` until the process exits; it holds nothing that needs releasing.
final class StdinService: Service, Sendable {
    private let journal: Journal
    private let stopsAtEnd: Bool
    private let stopping = Atomic<Bool>(false)

    init(journal: Journal, stopsAtEnd: Bool) {
        self.journal = journal
        self.stopsAtEnd = stopsAtEnd
    }

    func run() async throws {
        let (ended, end) = AsyncStream<Never>.makeStream()
        Thread.detachNewThread { [self] in
            readUntilEnd()
            end.finish()
        }
        await withGracefulShutdownHandler {
            for await _ in ended {}
        } onGracefulShutdown: {
            self.stopping.store(true, ordering: .relaxed)
            end.finish()
        }
        if !stopsAtEnd, !stopping.load(ordering: .relaxed) {
            // End of input while the socket still serves: wait for the signal.
            try? await gracefulShutdown()
        }
    }

    /// The reader thread.
    private func readUntilEnd() {
        var lines = LineSplitter(allowsStall: journal.allowsStall)
        var buffer = [UInt8](repeating: 0, count: 16384)
        while !stopping.load(ordering: .relaxed) {
            let n = read(STDIN_FILENO, &buffer, buffer.count)
            if n < 0, errno == EINTR { continue }
            if n <= 0 || stopping.load(ordering: .relaxed) { break }
            let batch = lines.feed(buffer[0..<n])
            if batch.isEmpty { continue }
            do {
                try journal.submit(batch) { replies in Self.writeOut(replies) }
            } catch {
                Self.writeOut(batch.map { _ in DaemonReplyError.shuttingDown.reply })
            }
        }
    }

    private static func writeOut(_ replies: [String]) {
        let text = Array(replies.map { $0 + "\n" }.joined().utf8)
        var written = 0
        while written < text.count {
            let n = text.withUnsafeBytes { write(STDOUT_FILENO, $0.baseAddress! + written, text.count - written) }
            if n < 0 { if errno == EINTR { continue }; return }
            written += n
        }
    }
}
