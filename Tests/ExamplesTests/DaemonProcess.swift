import DaemonExample
import ExampleSupport
import Foundation

/// `longthread-daemon` run as a child process, its standard error read line by line.
///
/// The executable is found next to the test bundle (SwiftPM puts every product of the package in
/// the same build directory, and `swift test` builds them all), or at `$LONGTHREAD_DAEMON`.
final class DaemonProcess: Sendable {
    let process: Process
    let directory: URL
    private let stderrLines = Protected<[String]>([])
    private let lineArrived = DispatchSemaphore(value: 0)
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

    init(directory: URL, arguments: [String]? = nil) throws {
        self.directory = directory
        process = Process()
        process.executableURL = try Self.executable
        process.arguments = arguments ?? [
            "--socket", directory.appendingPathComponent("d.sock").path,
            "--pidfile", directory.appendingPathComponent("d.pid").path,
            "--journal", directory.appendingPathComponent("journal.log").path,
        ]
        let pipe = Pipe()
        process.standardError = pipe
        process.standardOutput = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        let exited = self.exited
        process.terminationHandler = { _ in exited.signal() }
        try process.run()
        let reader = pipe.fileHandleForReading
        Thread.detachNewThread { [self] in
            var pending = Data()
            while true {
                let chunk = reader.availableData
                if chunk.isEmpty { break }
                pending.append(chunk)
                while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                    let line = String(decoding: pending[..<newline], as: UTF8.self)
                    pending.removeSubrange(...newline)
                    stderrLines.withLock { $0.append(line) }
                    lineArrived.signal()
                }
            }
        }
    }

    var stderr: [String] { stderrLines.withLock { $0 } }

    /// Waits for a standard-error line containing `text`, at most `timeout` seconds.
    func waitForLine(containing text: String, timeout: Double = 10) -> Bool {
        let deadline = DispatchTime.now() + timeout
        while true {
            if stderr.contains(where: { $0.contains(text) }) { return true }
            if lineArrived.wait(timeout: deadline) == .timedOut { return stderr.contains(where: { $0.contains(text) }) }
        }
    }

    /// Waits for the process to exit, at most `timeout` seconds; its status, or nil on timeout.
    func waitForExit(timeout: Double = 10) -> Int32? {
        if exited.wait(timeout: .now() + timeout) == .timedOut { return nil }
        exited.signal() // let later callers see it too
        return process.terminationStatus
    }

    func signal(_ signo: Int32) { kill(process.processIdentifier, signo) }

    /// Kills the process if a test left it running, and removes the directory.
    func cleanUp() {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            _ = waitForExit(timeout: 5)
        }
        try? FileManager.default.removeItem(at: directory)
    }
}

struct DaemonTestError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
