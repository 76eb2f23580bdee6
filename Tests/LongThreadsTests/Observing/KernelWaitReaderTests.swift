import CLongThreadsShims
import Glibc
@testable import LongThreads
import Testing

extension StallMonitoring {
    /// The decision between a stack and a kernel wait, from the `/proc` files' text.
    @Suite("StallMonitor: the syscall file alone decides how a stalled thread is looked at")
    struct KernelWaitReaderTests {
        private typealias Reader = KernelWaitReader
        private static let sleepingStat = "4242 (lt-worker (x)) S 1 2 3"
        private static let runningStat = "4242 (lt-worker (x)) R 1 2 3"

        #if arch(x86_64)
        private static let (futex, write) = (202, 1)
        private static let (read, recvfrom, fcntl, poll) = (0, 45, 72, 7)
        #elseif arch(arm64)
        private static let (futex, write) = (98, 64)
        private static let (read, recvfrom, fcntl, poll) = (63, 207, 25, 73) // ppoll: arm64 has no poll
        #endif

        @Test("a thread that woke after its stat was read (syscall says running) has its stack captured")
        func wokeBetweenReads() {
            #expect(Reader.wait(syscall: "running", stat: Self.sleepingStat, wchan: "0") == nil)
        }

        @Test("an unreadable or garbled syscall file gives no kernel wait: the stack is captured")
        func unreadable() {
            #expect(Reader.wait(syscall: "", stat: Self.sleepingStat, wchan: nil) == nil)
            #expect(Reader.wait(syscall: "what", stat: Self.sleepingStat, wchan: nil) == nil)
            #expect(Reader.wait(ofThread: Int32.max) == nil, "no such thread: /proc cannot be read")
        }

        #if arch(x86_64) || arch(arm64)
        @Test("a futex wait is recognised by its number, restarted unseen")
        func futexByNumber() throws {
            let line = "\(Self.futex) 0x7f00 0x80 0x2 0x0 0x0 0x0 0x7ffd1000 0x7f001234"
            let wait = try #require(Reader.wait(syscall: line, stat: Self.sleepingStat, wchan: "futex_wait_queue"))
            #expect(wait.isRestartedUnseen)
            #expect(wait.systemCall == Self.futex)
        }

        @Test("another system call is a kernel wait, with the state, number, name and wait channel")
        func otherCall() throws {
            let line = "\(Self.write) 0x4 0x7f00 0x40000 0x0 0x0 0x0 0x7ffd1000 0x0"
            let wait = try #require(Reader.wait(syscall: line, stat: Self.sleepingStat, wchan: "pipe_write"))
            #expect(!wait.isRestartedUnseen)
            #expect(wait.state == .sleeping)
            #expect(wait.systemCall == Self.write)
            #expect(wait.systemCallName == "write")
            #expect(wait.waitChannel == "pipe_write")
            #expect(wait.description == "sleeping in system call write (wait channel pipe_write)")
        }
        #endif

        /// A wait in call `number` with `arguments`, as the kernel's record gives it.
        private func wait(_ number: Int, _ arguments: [UInt64]) throws -> StallMonitor.KernelWait {
            let fields = (arguments + repeatElement(0, count: 6 - arguments.count)).map { "0x" + String($0, radix: 16) }
            let line = "\(number) \(fields.joined(separator: " ")) 0x7ffd1000 0x7f001234"
            return try #require(Reader.wait(syscall: line, stat: Self.sleepingStat, wchan: nil))
        }

        @Test("the record's stack pointer and instruction are where a walk starts")
        func stackPointerAndInstruction() throws {
            let wait = try wait(Self.write, [4, 0x7f00, 0x40000])
            #expect(wait.userStackPointer == 0x7ffd_1000)
            #expect(wait.userInstruction == 0x7f00_1234)
            #expect(wait.arguments == [4, 0x7f00, 0x40000, 0, 0, 0])
            let outside = try #require(Reader.wait(syscall: "-1 0x7ffd2000 0x7f005678", stat: Self.sleepingStat, wchan: nil))
            #expect(outside.userStackPointer == 0x7ffd_2000)
            #expect(outside.userInstruction == 0x7f00_5678)
        }

        @Test("read, recvfrom without MSG_WAITALL and fcntl(F_SETLKW) take the signal; a write, poll, MSG_WAITALL, a socket with a receive timeout do not")
        func restartedUnseenBySignal7() throws {
            var fds: [Int32] = [0, 0]
            #expect(pipe(&fds) == 0)
            var pair: [Int32] = [0, 0]
            #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &pair) == 0)
            defer { for fd in fds + pair { close(fd) } }
            let (pipeEnd, plainSocket, timedSocket) = (UInt64(fds[0]), UInt64(pair[0]), UInt64(pair[1]))
            var timeout = timeval(tv_sec: 5, tv_usec: 0)
            #expect(setsockopt(Int32(timedSocket), SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size)) == 0)

            #expect(try wait(Self.read, [pipeEnd, 0x7f00, 1]).isRestartedUnseen)
            #expect(try wait(Self.read, [plainSocket, 0x7f00, 1]).isRestartedUnseen)
            #expect(try !wait(Self.read, [timedSocket, 0x7f00, 1]).isRestartedUnseen, "SO_RCVTIMEO: EINTR")
            #expect(try wait(Self.recvfrom, [plainSocket, 0x7f00, 1, 0]).isRestartedUnseen)
            #expect(try !wait(Self.recvfrom, [plainSocket, 0x7f00, 1, UInt64(MSG_WAITALL)]).isRestartedUnseen, "may have moved bytes")
            #expect(try wait(Self.fcntl, [pipeEnd, UInt64(F_SETLKW), 0x7f00]).isRestartedUnseen)
            #expect(try !wait(Self.fcntl, [pipeEnd, UInt64(F_GETFL)]).isRestartedUnseen)
            #expect(try !wait(Self.write, [pipeEnd, 0x7f00, 1]).isRestartedUnseen, "may have moved bytes")
            #expect(try !wait(Self.poll, [0x7f00, 1, 0]).isRestartedUnseen, "never restarted")
        }

        @Test("the futex calls are recognised by number, not by a name table")
        func futexNumbers() {
            #if arch(x86_64) || arch(arm64)
            #expect(CLongThreadsShims_isFutexSystemCall(Self.futex))
            #expect(!CLongThreadsShims_isFutexSystemCall(Self.write))
            #endif
            #expect(!CLongThreadsShims_isFutexSystemCall(-1))
        }

        @Test("blocked outside a system call (-1): a kernel wait without a call; the state as stat says")
        func outsideACall() throws {
            let wait = try #require(Reader.wait(syscall: "-1 0x7ffd1000 0x7f001234", stat: Self.runningStat, wchan: "0"))
            #expect(wait.systemCall == nil)
            #expect(wait.waitChannel == nil)
            #expect(wait.state == .running)
            #expect(!wait.isRestartedUnseen)
        }

        @Test("state letters map to named states")
        func states() {
            typealias State = StallMonitor.KernelWait.State
            #expect(["R", "S", "D", "T", "t", "Z", "I"].map(State.init(letter:))
                == [.running, .sleeping, .diskSleep, .stopped, .stopped, .zombie, .other("I")])
            #expect(Reader.wait(syscall: "-1 0x0 0x0", stat: nil, wchan: nil)?.state == .other("?"))
        }
    }
}
