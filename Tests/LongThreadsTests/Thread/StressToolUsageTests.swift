import Foundation
import Synchronization
import Testing

/// The command line of `longthread-stress` (swift-argument-parser): usage errors on standard
/// error with exit status 64, `--version`, fractional durations.
///
/// In the `longthread-stress` suite, which is serialized: these synchronous tests block a thread
/// of the cooperative pool while the tool runs, and two such suites side by side starved the pool
/// (2 threads here) that other suites' tasks need.
extension StressToolTests {
    /// Runs the tool; returns its exit status, standard output and standard error.
    func runCapturingErrors(_ arguments: [String]) throws -> (status: Int32, output: String, errors: String) {
        let process = Process()
        process.executableURL = StressToolTests.tool
        process.arguments = arguments
        let (output, errors) = (Pipe(), Pipe())
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        // Read standard error on another thread: either pipe may fill while the other is read.
        let errorData = Mutex<Data>(Data())
        let errorsRead = DispatchSemaphore(value: 0)
        Thread {
            errorData.withLock { $0 = errors.fileHandleForReading.readDataToEndOfFile() }
            errorsRead.signal()
        }.start()
        let outputData = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        errorsRead.wait()
        return (
            process.terminationStatus,
            String(decoding: outputData, as: UTF8.self),
            String(decoding: errorData.withLock { $0 }, as: UTF8.self)
        )
    }

    @Test("bad usage: exit status 64, the message on standard error, nothing on standard output")
    func badUsageOnStandardError() throws {
        for arguments in [["--cycles", "many"], ["--scenario", "no-such"], ["--no-such-flag"], ["--duration", "soon"]] {
            let (status, output, errors) = try runCapturingErrors(arguments)
            #expect(status == 64, "\(arguments)")
            #expect(errors.contains("Error:"), "\(arguments): \(errors)")
            #expect(output.isEmpty, "\(arguments): \(output)")
        }
    }

    @Test("--version prints a version and exits 0; --help exits 0")
    func versionAndHelp() throws {
        let version = try runCapturingErrors(["--version"])
        #expect(version.status == 0)
        #expect(version.output.split(separator: ".").count == 3, "\(version.output)")
        let help = try runCapturingErrors(["--help"])
        #expect(help.status == 0)
        #expect(help.output.contains("--duration"))
    }

    @Test("--duration takes fractional seconds")
    func fractionalDuration() throws {
        let (status, output, errors) = try runCapturingErrors(["--duration", "0.5", "--cycles", "5", "--seed", "1", "--quiet"])
        #expect(status == 0, "\(errors)")
        #expect(output.contains("result: clean"))
    }
}
