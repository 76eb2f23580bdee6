import CLibBSD
import Dispatch
import Foundation
import Glibc
import LongThreads

/// `longthread-daemon`: a small Linux daemon built on LongThread.
///
/// - `daemon.journal` owns the journal file (a resource that must only be used from one thread)
///   and the process title; every request is serialized onto it.
/// - `daemon.io` accepts clients on a Unix-domain socket and reads their requests through
///   descriptor sources; standard input, if served, has a plain reader thread (a regular file
///   cannot be watched by epoll).
/// - SIGTERM/SIGINT arrive on a DispatchSource, never in a signal handler, and wake `main`, which
///   stops in order: stop accepting and reading, drain the journal (each accepted request is
///   written, synced and answered), write the last replies, close, remove the pidfile, exit 0.
public enum Daemon {
    /// Runs the daemon with the process's arguments and exits: 0 after a clean stop, 1 when it
    /// cannot start (another instance holds the pidfile, a path is unusable), 2 on bad usage.
    public static func main() -> Never {
        // setproctitle_init moves the environment and lets the title overwrite argv's memory:
        // copy the arguments out first.
        let arguments = Array(CommandLine.arguments.dropFirst())
        setproctitle_init(CommandLine.argc, CommandLine.unsafeArgv, environ)
        do {
            exit(try run(DaemonOptions(arguments: arguments)))
        } catch .help {
            print(DaemonOptions.usage)
            exit(0)
        } catch .usage(let message) {
            report("\(message)\n\(DaemonOptions.usage)")
            exit(2)
        } catch {
            report("\(error)")
            exit(1)
        }
    }

    /// Runs until SIGTERM/SIGINT (or end of input, when standard input is the only source).
    static func run(_ options: DaemonOptions) throws(DaemonError) -> Int32 {
        let pidfile = try PidFile(options.pidfilePath)
        let stop = DispatchSemaphore(value: 0)
        let signals = watchSignals { name in
            report("\(name): stopping")
            stop.signal()
        }
        defer { signals.forEach { $0.cancel() } }

        let journal: Journal
        let server: SocketServer?
        do {
            journal = try Journal(path: options.journalPath)
            if let path = options.socketPath {
                server = try SocketServer(path: path, journal: journal)
            } else {
                server = nil
            }
        } catch let error as DaemonError {
            pidfile.remove()
            throw error
        } catch {
            pidfile.remove()
            throw .system("cannot start: \(error)", errno: 0)
        }
        if options.serveStdin {
            // Standard input alone: its end is the end of the work. With a socket, the daemon
            // serves on until a signal.
            let stopsAtEnd = options.socketPath == nil
            StdinReader.start(journal: journal) { if stopsAtEnd { stop.signal() } }
        }
        pidfile.write()
        journal.show("serving")
        var sources: [String] = []
        if let path = options.socketPath { sources.append("socket \(path)") }
        if options.serveStdin { sources.append("stdin") }
        report("ready: pid \(getpid()), serving \(sources.joined(separator: " and "))")

        stop.wait()
        journal.show("draining")
        server?.stopAccepting()
        let records = journal.close()
        server?.finish()
        pidfile.remove()
        report("stopped: every accepted request answered; \(records) records in \(options.journalPath)")
        return 0
    }

    /// Diagnostics go to standard error, prefixed with the program's name.
    static func report(_ message: String) {
        FileHandle.standardError.write(Data("longthread-daemon: \(message)\n".utf8))
    }

    /// Turns SIGTERM and SIGINT into calls of `handler` on a dispatch queue: the signals are
    /// ignored as signals (no async-signal-safety to worry about) and read by libdispatch.
    private static func watchSignals(_ handler: @escaping @Sendable (String) -> Void) -> [any DispatchSourceSignal] {
        let queue = DispatchQueue(label: "daemon.signals")
        return [(SIGTERM, "SIGTERM"), (SIGINT, "SIGINT")].map { signo, name in
            signal(signo, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: signo, queue: queue)
            source.setEventHandler { handler(name) }
            source.resume()
            return source
        }
    }
}

/// libbsd's pidfile(3): `pidfile_open` creates and locks the file (a second instance finds it
/// locked and learns the running pid), `pidfile_write` writes our pid once we are ready,
/// `pidfile_remove` unlinks it at exit. The lock dies with the process, so a crash leaves no
/// stale lock.
struct PidFile: ~Copyable {
    private let handle: OpaquePointer?

    init(_ path: String?) throws(DaemonError) {
        guard let path else {
            handle = nil
            return
        }
        var running: pid_t = 0
        guard let handle = pidfile_open(path, 0o644, &running) else {
            if errno == EEXIST { throw .alreadyRunning(pid: running > 0 ? running : nil, pidfile: path) }
            throw .system("cannot open pidfile \(path)", errno: errno)
        }
        self.handle = handle
    }

    func write() {
        if let handle { pidfile_write(handle) }
    }

    func remove() {
        if let handle { pidfile_remove(handle) }
    }
}

/// Standard input as a request source: lines in, replies on standard output, in order. A plain
/// thread with blocking reads, since a regular file (`< requests.txt`) cannot be watched by epoll.
enum StdinReader {
    static func start(journal: Journal, onEnd: @escaping @Sendable () -> Void) {
        Thread.detachNewThread {
            var lines = LineSplitter()
            var buffer = [UInt8](repeating: 0, count: 16384)
            while true {
                let n = read(STDIN_FILENO, &buffer, buffer.count)
                if n < 0, errno == EINTR { continue }
                if n <= 0 { break }
                let batch = lines.feed(buffer[0..<n])
                if batch.isEmpty { continue }
                do {
                    try journal.submit(batch) { replies in writeOut(replies) }
                } catch {
                    writeOut(batch.map { _ in DaemonReplyError.shuttingDown.reply })
                }
            }
            onEnd()
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
