import Foundation
import CLongThreadsShims
import Glibc
@testable import LongThreads
import LongThreadsTestSupport
import Testing

/// Before CF makes a thread's run loop, the library takes the descriptors CF will need and gives
/// them back (`DescriptorHeadroom`): in one `close_range` when they are consecutive. Every
/// descriptor the library opens of its own is opened under the same lock, so none takes a slot
/// found free for CF.
@Suite("Descriptor headroom")
struct DescriptorHeadroomTests {
    @Test("starting a thread among scattered free descriptors closes none of the caller's")
    func probeClosesOnlyItsOwn() throws {
        // Take the lowest free descriptors, then free every other one: the probe's descriptors then
        // come out with ours between them, and giving them back as one range would close ours.
        var taken: [Int32] = []
        for _ in 0..<16 {
            let fd = open("/dev/null", O_RDONLY | O_CLOEXEC)
            try #require(fd >= 0)
            taken.append(fd)
        }
        let kept = taken.indices.filter { $0 % 2 == 1 }.map { taken[$0] }
        for index in taken.indices where index % 2 == 0 { close(taken[index]) }
        defer { for fd in kept { close(fd) } }

        let thread = try LongThread(name: "lt-headroom")
        #expect(try thread.sync { 1 } == 1)
        thread.stop()

        for fd in kept {
            #expect(fcntl(fd, F_GETFD) >= 0, "descriptor \(fd) was closed by the thread's start")
        }
    }

    @Test("with standard input closed, a thread still starts (the probe falls back to an eventfd)")
    func probeWithoutStandardInput() async {
        // In a child: closing descriptor 0 would disturb every other test of this process.
        await #expect(processExitsWith: .success) {
            close(0)
            if fcntl(0, F_GETFD) >= 0 { exit(3) }
            let thread = try LongThread(name: "lt-no-stdin")
            guard try await thread.run({ 1 }) == 1 else { exit(1) }
            await thread.stop()
        }
    }

    /// The ways to make a descriptor, in Swift. A `/proc` read of the wait policy's, opened beside
    /// the headroom's lock, took the slot a thread's start had just found free for CF: CF halted
    /// the process (SIGILL) in `watchesRaceThreadStarts`, once in CI.
    static func descriptorMakers() -> Regex<(Substring, Substring?, Substring?)> { #/\b(open|fopen|opendir|pipe2?|socket|socketpair|dup[23]?|eventfd|signalfd|timerfd_create|inotify_init1?|memfd_create|epoll_create1?)\(|F_DUPFD|CLongThreadsShims_(eventfd|epollCreate)\(|FileManager|FileHandle|String\(contentsOf|Data\(contentsOf|ImageMap\.capture|\.symbolicated\(/# }

    @Test("no line of the core makes a descriptor except through the headroom's lock")
    func everyDescriptorThroughTheHeadroom() throws {
        let sources = try WakeProtocolTests.coreSources()
        #expect(sources.count > 20, "read \(sources.count) source files")
        let makers = Self.descriptorMakers()
        var offenders: [String] = []
        for (path, code) in sources where path != "Engine/DescriptorHeadroom.swift" {
            var function = ""
            for line in code.split(separator: "\n") {
                if let declared = line.firstMatch(of: #/func (\w+)/#) { function = String(declared.1) }
                guard line.contains(makers), !line.contains("DescriptorHeadroom.") else { continue }
                if Self.symbolication.contains(function), path == "Observing/StallMonitor+Stack.swift" { continue }
                offenders.append("\(path), \(function): \(line.trimmingCharacters(in: .whitespaces))")
            }
        }
        #expect(offenders.isEmpty, "descriptors opened outside `DescriptorHeadroom`: \(offenders)")
        // The stall monitor's symbolication opens files (/proc/self/maps, the images) inside
        // `name` and the `imageMap` it calls, and `name` runs only under `excludingCF`.
        let stack = try #require(sources.first { $0.path == "Observing/StallMonitor+Stack.swift" }).code
        #expect(stack.components(separatedBy: "name(unknown)").count == 2
                && stack.contains("DescriptorHeadroom.excludingCF { name(unknown) }"),
                "the stall monitor names frames outside `DescriptorHeadroom.excludingCF`")
        #expect(stack.components(separatedBy: "imageMap(covering:").count == 2,
                "`imageMap` is called from somewhere other than `name`")
    }

    /// The stall monitor's functions that open files for symbolication (see the check above).
    static let symbolication: Set<String> = ["name", "imageMap"]

    @Test("while CF is given descriptors, the library's /proc reads and symbolication wait for it")
    func ownReadsWaitForCF() throws {
        let finished = Latch(count: 3)
        let address = UInt(bitPattern: dlsym(UnsafeMutableRawPointer(bitPattern: 0), "getpid")) + 3
        let readers: [@Sendable () -> Void] = [
            { _ = RunnableThreads.sample(now: 0, maximumAge: 0) },
            { _ = KernelWaitReader.wait(ofThread: CLongThreadsShims_gettid()) },
            { _ = StackSampler.symbolicate([address]) },
        ]
        try DescriptorHeadroom.withDescriptors(DescriptorHeadroom.runLoop) {
            // Where CF would make its descriptors: a reader that got here would have taken one.
            for read in readers { Thread { read(); finished.countDown() }.start() }
            #expect(!finished.wait(timeout: .milliseconds(300)), "a reader opened a descriptor while CF held the slots")
        }
        #expect(finished.wait(), "a reader never finished after CF was done")
    }
}
