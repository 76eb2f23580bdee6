@testable import LongThreads
import Testing

extension StallMonitoring {
    /// Which addresses a walk without a signal takes for code (`ExecutableMappings`).
    @Suite("StallMonitor: only code counts as a return address, not an executable stack")
    struct ExecutableMappingsTests {
        /// A process that loads a library marked as needing an executable stack (Swift 6.3's
        /// libswiftRuntime.so is: GNU_STACK RWE) has glibc map every thread's stack rwx. A stack
        /// word that points into a stack and follows bytes that look like a call must not pass
        /// for a return address: the walk then named a frame `0x7f… (?)` where the C caller is.
        static let maps = """
            55d0c0000000-55d0c0010000 r-xp 00001000 08:01 1234 /usr/bin/app
            7f61ed7f9000-7f61edffa000 rwxp 00000000 00:00 0
            7f61ee000000-7f61ee021000 rwxp 00000000 00:00 0 [stack]
            7f61ef000000-7f61ef1d5000 r-xp 00028000 08:01 5678 /usr/lib/x86_64-linux-gnu/libc.so.6
            7f61f0000000-7f61f0001000 rwxp 00000000 08:01 9012 /opt/jit/cache.bin
            """

        @Test("an executable, writable anonymous mapping (a thread's stack under an RWE library) is not code")
        func executableStacksAreNotCode() {
            let mappings = ExecutableMappings(maps: Self.maps)
            #expect(mappings.image(at: 0x7F61_EDFF_8EF0) == nil, "a thread's stack taken for code")
            #expect(mappings.image(at: 0x7F61_EE00_0100) == nil, "the main stack taken for code")
        }

        @Test("code keeps its image: the program, a library, and a writable mapping of a file")
        func codeKeepsItsImage() {
            let mappings = ExecutableMappings(maps: Self.maps)
            #expect(mappings.image(at: 0x55D0_C000_0100) == "/usr/bin/app")
            #expect(mappings.image(at: 0x7F61_EF00_0100) == "/usr/lib/x86_64-linux-gnu/libc.so.6")
            #expect(mappings.image(at: 0x7F61_F000_0100) == "/opt/jit/cache.bin")
            #expect(mappings.image(at: 0x1000) == nil)
        }
    }
}
