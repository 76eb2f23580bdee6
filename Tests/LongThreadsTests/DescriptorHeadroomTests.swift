import Glibc
import LongThreads
import Testing

/// Before CF makes a thread's run loop, the library takes the descriptors CF will need and gives
/// them back (`DescriptorHeadroom`): in one `close_range` when they are consecutive.
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
}
