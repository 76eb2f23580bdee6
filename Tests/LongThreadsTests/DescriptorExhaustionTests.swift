import Foundation
import Glibc
import LongThreads
import Testing

/// A daemon near its descriptor limit gets thrown errors, never a halted process.
///
/// Lowering `RLIMIT_NOFILE` and using every descriptor would break every other test running in
/// the process, so the work runs in a child: this test binary again, filtered to `child()`.
@Suite("Out of file descriptors")
struct DescriptorExhaustionTests {
    static let childVariable = "LONGTHREAD_DESCRIPTOR_EXHAUSTION_CHILD"

    @Test("with 0 to 5 descriptors free, starting a thread or using a new mode throws EMFILE; the process lives")
    func exhaustion() throws {
        if ProcessInfo.processInfo.environment[Self.childVariable] != nil { return }
        let child = Process()
        child.executableURL = URL(fileURLWithPath: CommandLine.arguments[0])
        child.arguments = ["--testing-library", "swift-testing", "--filter", "DescriptorExhaustionTests/child"]
        child.environment = ProcessInfo.processInfo.environment.merging([Self.childVariable: "1"]) { $1 }
        let output = Pipe()
        child.standardOutput = output
        child.standardError = output
        try child.run()
        let finished = Latch()
        Thread { child.waitUntilExit(); finished.countDown() }.start()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(finished.wait(timeout: .seconds(120)))
        #expect(child.terminationReason == .exit, "the child died of a signal:\n\(text)")
        #expect(child.terminationStatus == 0, "\(text)")
        #expect(text.contains("exhaustion: ok"), "\(text)")
    }

    /// Runs only in the child process.
    @Test("child process of the exhaustion test")
    func child() throws {
        guard ProcessInfo.processInfo.environment[Self.childVariable] != nil else { return }
        var original = rlimit()
        getrlimit(Int32(RLIMIT_NOFILE.rawValue), &original)
        let probe = open("/dev/null", O_RDONLY)
        close(probe)
        var lowered = original
        lowered.rlim_cur = min(original.rlim_max, rlim_t(probe + 64))
        #expect(setrlimit(Int32(RLIMIT_NOFILE.rawValue), &lowered) == 0)
        defer { setrlimit(Int32(RLIMIT_NOFILE.rawValue), &original) }

        let running = try LongThread(name: "lt-exhaust")
        let emfile = EMFILE
        // Fill every descriptor, then free `free` of them for each attempt.
        var filler: [Int32] = []
        while true {
            let fd = open("/dev/null", O_RDONLY)
            if fd < 0 { break }
            filler.append(fd)
        }
        var outcomes: [String] = []
        for free in 0...5 {
            let freed = filler.suffix(free)
            filler.removeLast(free)
            for fd in freed { close(fd) }
            do {
                let thread = try LongThread(name: "lt-exhaust-\(free)")
                outcomes.append("start \(free): ok")
                thread.stop()
            } catch LongThreadError.cannotStart(let errno) where errno == emfile {
                outcomes.append("start \(free): EMFILE")
            } catch {
                outcomes.append("start \(free): \(error)")
            }
            do {
                try running.perform(modes: [RunLoop.Mode("exhaust-\(free)")]) {}
                outcomes.append("mode \(free): ok")
            } catch LongThreadError.outOfResources(let errno) where errno == emfile {
                outcomes.append("mode \(free): EMFILE")
            } catch {
                outcomes.append("mode \(free): \(error)")
            }
            let nested = try running.sync { () -> String in
                do {
                    _ = try running.runNested(in: RunLoop.Mode("nested-\(free)"), until: .now)
                    return "ok"
                } catch LongThreadError.outOfResources(let errno) where errno == emfile {
                    return "EMFILE"
                } catch {
                    return "\(error)"
                }
            }
            outcomes.append("nested \(free): \(nested)")
            // Take back whatever is free again.
            while true {
                let fd = open("/dev/null", O_RDONLY)
                if fd < 0 { break }
                filler.append(fd)
            }
        }
        for fd in filler { close(fd) }
        try running.sync {} // still serving
        running.stop()
        let restarted = try LongThread(name: "lt-exhaust-after")
        try restarted.sync {}
        restarted.stop()
        print(outcomes.joined(separator: "\n"))
        // With nothing free, every attempt is refused; every outcome is success or EMFILE.
        #expect(outcomes.prefix(3) == ["start 0: EMFILE", "mode 0: EMFILE", "nested 0: EMFILE"])
        #expect(outcomes.allSatisfy { $0.hasSuffix(": ok") || $0.hasSuffix(": EMFILE") })
        print("exhaustion: ok")
    }
}
