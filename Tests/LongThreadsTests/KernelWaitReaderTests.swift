import CLongThreadsShims
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
        #elseif arch(arm64)
        private static let (futex, write) = (98, 64)
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
