import DaemonExample
import ExampleSupport
import Foundation
import Testing

/// `longthread-daemon` run as a child process, its standard error (and output) read line by line.
///
/// The executable is found next to the test bundle (SwiftPM puts every product of the package in
/// the same build directory, and `swift test` builds them all), or at `$LONGTHREAD_DAEMON`. It is
/// started by absolute path, as a service manager starts it.
final class DaemonProcess: Sendable {
    let process: Process
    let directory: URL
    /// Standard error: the daemon's log.
    let log: CapturedLines
    /// Standard output (replies to standard input, help, version).
    let output: CapturedLines
    private let exited = DispatchSemaphore(value: 0)

    static var executable: URL {
        get throws {
            if let path = ProcessInfo.processInfo.environment["LONGTHREAD_DAEMON"] { return URL(fileURLWithPath: path) }
            let here = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
            let candidate = here.appendingPathComponent("longthread-daemon")
            guard FileManager.default.isExecutableFile(atPath: candidate.path) else {
                throw DaemonTestError("longthread-daemon not found at \(candidate.path): run `swift build --product longthread-daemon` or set LONGTHREAD_DAEMON")
            }
            return candidate
        }
    }

    /// A fresh temporary directory for a socket, a pidfile and a journal. Short, since a socket
    /// path must fit in 107 bytes.
    static func makeDirectory() throws -> URL {
        let url = URL(fileURLWithPath: "/tmp").appendingPathComponent("ltd-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    var socketPath: String { directory.appendingPathComponent("d.sock").path }
    var pidfilePath: String { directory.appendingPathComponent("d.pid").path }
    var journalPath: String { directory.appendingPathComponent("journal.log").path }

    /// Starts the daemon on a socket, a pidfile and a journal in `directory`, with `options`
    /// added, or with exactly `arguments`; `environment` is added to the test's own. `input`, if
    /// given, is its whole standard input; otherwise standard input is empty. `openFileLimit`, if
    /// given, is its RLIMIT_NOFILE (set by a shell that then becomes the daemon: same pid).
    init(
        directory: URL,
        arguments: [String]? = nil,
        options: [String] = [],
        environment: [String: String] = [:],
        input: String? = nil,
        openFileLimit: Int? = nil
    ) throws {
        self.directory = directory
        process = Process()
        let daemonArguments = arguments ?? [
            "--socket", directory.appendingPathComponent("d.sock").path,
            "--pidfile", directory.appendingPathComponent("d.pid").path,
            "--journal", directory.appendingPathComponent("journal.log").path,
        ] + options
        if let openFileLimit {
            process.executableURL = URL(fileURLWithPath: "/bin/sh")
            process.arguments = ["-c", "ulimit -n \(openFileLimit) && exec \"$0\" \"$@\"", try Self.executable.path] + daemonArguments
        } else {
            process.executableURL = try Self.executable
            process.arguments = daemonArguments
        }
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let errors = Pipe(), outputs = Pipe()
        process.standardError = errors
        process.standardOutput = outputs
        let inputs = input.map { _ in Pipe() }
        process.standardInput = inputs ?? FileHandle.nullDevice
        let exited = self.exited
        process.terminationHandler = { _ in exited.signal() }
        try process.run()
        if let inputs, let input {
            inputs.fileHandleForWriting.write(Data(input.utf8))
            try inputs.fileHandleForWriting.close()
        }
        log = CapturedLines(errors.fileHandleForReading)
        output = CapturedLines(outputs.fileHandleForReading)
    }

    var stderr: [String] { log.lines }

    /// Waits for a standard-error line containing `text`, at most `timeout` seconds.
    func waitForLine(containing text: String, timeout: Double = 10) -> Bool {
        log.waitForLine(containing: text, timeout: timeout) != nil
    }

    /// Waits for the process to exit, at most `timeout` seconds; its status, or nil on timeout.
    func waitForExit(timeout: Double = 10) -> Int32? {
        if exited.wait(timeout: .now() + timeout) == .timedOut { return nil }
        exited.signal() // let later callers see it too
        return process.terminationStatus
    }

    func signal(_ signo: Int32) { kill(process.processIdentifier, signo) }

    /// CPU time the daemon used so far (user and system), from /proc.
    var cpuTime: Duration {
        get throws {
            let stat = try String(contentsOfFile: "/proc/\(process.processIdentifier)/stat", encoding: .utf8)
            // Fields after the command name (which may hold spaces) in parentheses.
            let fields = stat[stat.index(after: stat.lastIndex(of: ")")!)...].split(separator: " ")
            let ticks = Int(fields[11])! + Int(fields[12])! // utime, stime: fields 14 and 15 of stat
            return .milliseconds(ticks * 1000 / sysconf(Int32(_SC_CLK_TCK)))
        }
    }

    /// How many descriptor numbers below `limit` the daemon has free now (its `/proc/<pid>/fd`;
    /// it may have inherited some above its limit).
    func freeDescriptors(limit: Int) -> Int {
        let open = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(process.processIdentifier)/fd")) ?? []
        return limit - open.compactMap { Int($0) }.filter { $0 < limit }.count
    }

    /// The daemon's resident memory, from /proc.
    var residentBytes: Int {
        get throws { try statusBytes("VmRSS:") }
    }

    /// The most resident memory the daemon had so far (its high-water mark), from /proc.
    var peakResidentBytes: Int {
        get throws { try statusBytes("VmHWM:") }
    }

    private func statusBytes(_ field: String) throws -> Int {
        let status = try String(contentsOfFile: "/proc/\(process.processIdentifier)/status", encoding: .utf8)
        let line = try #require(status.split(separator: "\n").first { $0.hasPrefix(field) })
        let fields = line.split { $0 == " " || $0 == "\t" } // "VmRSS:\t  1234 kB"
        return try #require(fields.count > 1 ? Int(fields[1]) : nil) * 1024
    }

    /// Kills the process if a test left it running, and removes the directory.
    func cleanUp() {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            _ = waitForExit(timeout: 5)
        }
        try? FileManager.default.removeItem(at: directory)
    }
}

/// The lines a child process writes to a pipe, each with the moment it arrived, read on a thread
/// of their own until the pipe closes.
final class CapturedLines: Sendable {
    private let received = Protected<[(at: ContinuousClock.Instant, text: String)]>([])
    private let arrived = DispatchSemaphore(value: 0)
    private let ended = DispatchSemaphore(value: 0)

    init(_ handle: FileHandle) {
        Thread.detachNewThread { [self] in
            var pending = Data()
            while true {
                let chunk = handle.availableData
                if chunk.isEmpty { break }
                pending.append(chunk)
                while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                    let line = String(decoding: pending[..<newline], as: UTF8.self)
                    pending.removeSubrange(...newline)
                    received.withLock { $0.append((.now, line)) }
                    arrived.signal()
                }
            }
            ended.signal()
        }
    }

    /// Waits until the writer closed the pipe (exited), at most `timeout` seconds; then `lines`
    /// is all there is.
    func waitForEnd(timeout: Double = 10) -> Bool {
        if ended.wait(timeout: .now() + timeout) == .timedOut { return false }
        ended.signal() // let later callers see it too
        return true
    }

    var lines: [String] { received.withLock { $0.map(\.text) } }
    var timedLines: [(at: ContinuousClock.Instant, text: String)] { received.withLock { $0 } }

    /// Waits for a line containing `text`, at most `timeout` seconds; the first such line and
    /// when it arrived, or nil.
    @discardableResult
    func waitForLine(containing text: String, timeout: Double = 10) -> (at: ContinuousClock.Instant, text: String)? {
        let deadline = DispatchTime.now() + timeout
        while true {
            if let line = timedLines.first(where: { $0.text.contains(text) }) { return line }
            if arrived.wait(timeout: deadline) == .timedOut { return timedLines.first { $0.text.contains(text) } }
        }
    }
}

struct DaemonTestError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
