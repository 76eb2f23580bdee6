import Foundation
import Glibc
@testable import LongThreads
import Testing

/// A stall report's stack is named from the process's images (`StackSampler.symbolicate`), read
/// on the monitor thread while the rest of the process maps and unmaps files as it pleases.
@Suite("Stall stacks: naming frames")
struct StackSymbolicationTests {
    @Test("files mapped and unmapped while frames are named: no fault, and the frames still named")
    func imagesComeAndGo() async {
        // In a child: a fault would end the test runner.
        await #expect(processExitsWith: .success) {
            // A file of its own, mapped and unmapped without pause: listed in /proc/self/maps one
            // moment and gone the next, as a library unloaded or a file read through mmap.
            let path = "/tmp/lt-symbolicate-\(getpid())"
            let fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0o600)
            guard fd >= 0, ftruncate(fd, 1 << 16) == 0 else { exit(2) }
            unlink(path)
            Thread.detachNewThread {
                while true {
                    let mapped = mmap(nil, 1 << 16, PROT_READ, MAP_PRIVATE, fd, 0)
                    if mapped != MAP_FAILED { munmap(mapped, 1 << 16) }
                }
            }
            // Addresses in no image, a new one each time: each naming captures the images again.
            let heap = UnsafeMutableRawPointer.allocate(byteCount: 4_096, alignment: 16)
            for index in 0..<400 {
                _ = StackSampler.symbolicate([UInt(bitPattern: heap) + UInt(index) * 8])
            }
            // Meanwhile the images still name a frame (inside libc's getpid).
            let own = UInt(bitPattern: dlsym(nil, "getpid")) + 1
            let frames = StackSampler.symbolicate([own])
            guard frames.first?.symbol?.contains("getpid") == true else { exit(3) }
            exit(0)
        }
    }
}
