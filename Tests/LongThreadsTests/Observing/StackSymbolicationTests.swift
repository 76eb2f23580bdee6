import CStallFixtures
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

    /// A stripped shared library (no `.symtab`) and one of its exported functions, if installed:
    /// Debian's Tcl (as a Tcl interpreter confined to a LongThread stalls in it), else zlib.
    private static let strippedLibrary: (name: String, function: String, address: UInt)? = {
        for (name, function) in [("libtcl8.6.so", "Tcl_EvalEx"), ("libz.so.1", "deflate")] {
            if let handle = dlopen(name, RTLD_NOW), let address = dlsym(handle, function) {
                return (name, function, UInt(bitPattern: address))
            }
        }
        return nil
    }()

    @Test("a stripped library's exported function is named from .dynsym, with the offset into it",
          .enabled(if: strippedLibrary != nil))
    func dynamicSymbol() throws {
        let library = try #require(Self.strippedLibrary)
        let function = library.address
        // A return address 0x13 bytes into it (the second frame: the first is the interrupted
        // instruction), as a Tcl stack has `Tcl_EvalEx+0x13`.
        let frames = StackSampler.symbolicate([function + 0x13, function + 0x13])
        let frame = try #require(frames.last)
        #expect(frame.symbol == library.function, "\(frame)")
        #expect(frame.offset == 0x13, "\(frame)")
        #expect(frame.image == library.name, "\(frame)")
        #expect(frame.description == "\(library.function) + 19 (\(library.name))")
    }

    @Test("a frame no symbol names prints its address and its offset in the image",
          .enabled(if: strippedLibrary != nil))
    func unnamedFrame() throws {
        let library = try #require(Self.strippedLibrary)
        var base: UInt = 0
        let address = fixture_unnamed_code_address(UnsafeRawPointer(bitPattern: library.address), &base)
        try #require(address != 0 && base != 0)
        let frame = try #require(StackSampler.symbolicate([address]).first)
        #expect(frame.symbol == nil, "\(frame)")
        #expect(frame.image == library.name, "\(frame)")
        // The library's lowest segment loads at its base: the offset is the address `addr2line` takes.
        #expect(frame.offset == address - base, "\(frame)")
        let expected = "0x\(String(address, radix: 16)) (\(library.name) + 0x\(String(address - base, radix: 16)))"
        #expect(frame.description == expected)
    }

    @Test("Swift symbols read from an image's own table are demangled")
    func demangling() {
        #expect(StackSampler.demangled("$s11LongThreads0A6ThreadC4stopyyF") == "LongThreads.LongThread.stop() -> ()")
        #expect(StackSampler.demangled("Tcl_EvalEx") == "Tcl_EvalEx")
        #expect(StackSampler.demangled("$snot a symbol") == "$snot a symbol")
    }
}
