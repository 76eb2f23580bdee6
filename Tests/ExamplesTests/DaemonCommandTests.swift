import DaemonExample
import Foundation
import Testing

/// `longthread-daemon`'s command line (swift-argument-parser): help and version on standard
/// output with exit 0, bad usage on standard error with exit 64, durations in fractional seconds.
@Suite(.timeLimit(.minutes(1)))
struct DaemonCommandTests {
    @Test("the bounds take fractional seconds and bytes")
    func parsesBounds() throws {
        let command = try DaemonCommand.parse([
            "--journal", "j", "--socket", "s", "--idle-timeout", "1.5", "--shutdown-timeout", "0.25",
            "--stall-threshold", "0.3", "--max-reply-buffer", "4096",
        ])
        #expect(command.idleTimeout.duration == .milliseconds(1500))
        #expect(command.shutdownTimeout.duration == .milliseconds(250))
        #expect(command.stallThreshold.duration == .milliseconds(300))
        #expect(command.maxReplyBuffer == 4096)
    }

    @Test("defaults: 300 s idle, 1 MiB of replies, 5 s to shut down, 1 s stall threshold")
    func defaults() throws {
        let command = try DaemonCommand.parse(["--journal", "j", "--stdin"])
        #expect(command.idleTimeout.duration == .seconds(300))
        #expect(command.maxReplyBuffer == 1 << 20)
        #expect(command.shutdownTimeout.duration == .seconds(5))
        #expect(command.stallThreshold.duration == .seconds(1))
    }

    @Test("bad usage is exit code 64 (EX_USAGE)", arguments: [
        ["--journal", "j"], // neither --socket nor --stdin
        ["--socket", "s"], // no --journal
        ["--journal", "j", "--stdin", "--idle-timeout", "-1"],
        ["--journal", "j", "--stdin", "--idle-timeout", "soon"],
        ["--journal", "j", "--stdin", "--stall-threshold", "0"],
        ["--journal", "j", "--stdin", "--max-reply-buffer", "0"],
        ["--journal", "j", "--stdin", "--frobnicate"],
    ])
    func badUsage(arguments: [String]) {
        #expect(throws: (any Error).self) {
            do {
                _ = try DaemonCommand.parse(arguments)
            } catch {
                #expect(DaemonCommand.exitCode(for: error).rawValue == 64, "\(arguments): \(error)")
                throw error
            }
        }
    }

    @Test("the executable: --help and --version on standard output exit 0; bad usage on standard error exits 64")
    func executable() throws {
        let directory = try DaemonProcess.makeDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }

        let help = try DaemonProcess(directory: directory, arguments: ["--help"])
        #expect(help.waitForExit() == 0)
        #expect(help.output.waitForEnd())
        #expect(help.output.lines.contains { $0.contains("--idle-timeout <seconds>") }, "\(help.output.lines)")

        let version = try DaemonProcess(directory: directory, arguments: ["--version"])
        #expect(version.waitForExit() == 0)
        #expect(version.output.waitForLine(containing: DaemonCommand.version) != nil)

        let bad = try DaemonProcess(directory: directory, arguments: ["--journal", "j", "--idle-timeout", "1.5.0", "--stdin"])
        #expect(bad.waitForExit() == 64)
        #expect(bad.log.waitForLine(containing: "1.5.0") != nil, "the error names the bad value, on standard error")
        #expect(bad.output.waitForEnd())
        #expect(bad.output.lines.isEmpty)
    }

    @Test("standard input alone: replies on standard output, in order; end of input stops it, exit 0")
    func standardInput() throws {
        let directory = try DaemonProcess.makeDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let journal = directory.appendingPathComponent("journal.log").path
        let daemon = try DaemonProcess(
            directory: directory,
            arguments: ["--journal", journal, "--stdin"],
            input: "APPEND one\nFROB\nAPPEND two\nCOUNT\n"
        )
        #expect(daemon.waitForExit() == 0)
        #expect(daemon.output.waitForEnd())
        #expect(daemon.output.lines == ["OK 1", #"ERR unknown command "FROB" (expected APPEND <text>, COUNT or PING)"#, "OK 2", "OK 2"])
        #expect(try String(contentsOfFile: journal, encoding: .utf8) == "1\tone\n2\ttwo\n")
    }
}
