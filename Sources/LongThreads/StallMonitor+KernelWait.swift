import CLongThreadsShims
import Glibc

extension StallMonitor {
    /// Where a stalled thread that was asleep in the kernel waited, read from `/proc` instead of
    /// interrupting it for its stack (``Report/kernelWait``).
    ///
    /// A thread asleep in a system call other than a futex wait is never sent the capture
    /// signal: a handler would cut short what it waits in (a blocking `write` to a full pipe
    /// returns a short count, `usleep` and `poll` return early). The monitor reads
    /// `/proc/self/task/<tid>/syscall`, `/proc/self/task/<tid>/stat` and
    /// `/proc/self/task/<tid>/wchan` instead, which disturbs nothing. The `syscall` file alone
    /// decides: a thread it shows running (one that woke since the stall was seen), or a file
    /// that cannot be read, gets its stack captured; so does a futex wait, which the kernel
    /// restarts unseen.
    ///
    /// - Threading: a value; reports are handed to the monitor's handler on its thread.
    public struct KernelWait: Sendable, Hashable, CustomStringConvertible {
        /// A thread's scheduler state, from `/proc/self/task/<tid>/stat`.
        ///
        /// - Threading: a value.
        public enum State: Sendable, Hashable, CustomStringConvertible {
            /// `R`: on a CPU or ready for one (it woke between the monitor's reads of `/proc`).
            case running
            /// `S`: asleep and interruptible, as in a blocking `read`, `poll` or `nanosleep`.
            case sleeping
            /// `D`: asleep and uninterruptible, as in disk or other kernel I/O.
            case diskSleep
            /// `T` or `t`: stopped by a signal, or by a tracer.
            case stopped
            /// `Z`: exited, not yet reaped.
            case zombie
            /// Another letter (`I` idle, `X` dead, ...), or `?` when `stat` could not be read.
            case other(Character)

            /// The state for a letter of `/proc/.../stat`.
            public init(letter: Character) {
                switch letter {
                case "R": self = .running
                case "S": self = .sleeping
                case "D": self = .diskSleep
                case "T", "t": self = .stopped
                case "Z": self = .zombie
                default: self = .other(letter)
                }
            }

            /// `running`, `sleeping`, `disk sleep`, `stopped`, `zombie`, or `state X`.
            public var description: String {
                switch self {
                case .running: "running"
                case .sleeping: "sleeping"
                case .diskSleep: "disk sleep"
                case .stopped: "stopped"
                case .zombie: "zombie"
                case .other(let letter): "state \(letter)"
                }
            }
        }

        /// The thread's scheduler state, read just after the system call: normally
        /// ``State/sleeping`` or ``State/diskSleep``; ``State/running`` if it woke meanwhile.
        public var state: State
        /// The number of the system call it is in, if it is in one (`-1` in the kernel's file:
        /// blocked outside a system call, say on a page fault, gives nil).
        public var systemCall: Int?
        /// The system call's name when the library knows the number on this architecture (the
        /// common blocking calls on x86_64 and arm64: `read`, `write`, `poll`, `futex`,
        /// `epoll_wait`, `nanosleep`, `accept`, ...); nil otherwise (``systemCall`` has the number).
        public var systemCallName: String?
        /// The kernel function the thread sleeps in (`wchan`, say `pipe_write` or
        /// `futex_wait_queue`); nil when the kernel hides it (it then reads `0`).
        public var waitChannel: String?
        /// The user-space instruction that made the system call, named: the C library's wrapper
        /// (`write`, or, with a newer glibc, its common `__syscall_cancel_arch`); nil when the
        /// kernel does not say.
        public var caller: Frame?

        /// Whether the thread waits in a futex (a lock, a condition): the kernel restarts that
        /// wait after a handler installed with `SA_RESTART` as if nothing happened, so the
        /// monitor may signal the thread for its stack instead. Decided by number, so that it
        /// holds on every architecture (`futex`, `futex_time64`, `futex_waitv`, `futex_wait`).
        var isRestartedUnseen: Bool {
            systemCall.map { CLongThreadsShims_isFutexSystemCall($0) } ?? false
        }

        /// `sleeping in system call write (wait channel pipe_write), called from
        /// __syscall_cancel_arch + 31 (libc.so.6)`.
        public var description: String {
            var text = "\(state)"
            if let systemCall { text += " in system call \(systemCallName ?? "#\(systemCall)")" }
            if let waitChannel { text += " (wait channel \(waitChannel))" }
            if let caller { text += ", called from \(caller)" }
            return text
        }
    }
}

/// Reads how a thread waits in the kernel from `/proc` (see `StallMonitor.KernelWait`).
enum KernelWaitReader {
    /// How the thread waits, if it is asleep in the kernel; nil when it runs, or when `/proc`
    /// cannot be read (then the monitor captures its stack).
    static func wait(ofThread tid: Int32) -> StallMonitor.KernelWait? {
        let task = "/proc/self/task/\(tid)"
        // The system call file decides alone: `stat`, read apart from it, may be older or newer.
        guard let syscall = read("\(task)/syscall") else { return nil }
        return wait(syscall: syscall, stat: read("\(task)/stat"), wchan: read("\(task)/wchan"))
    }

    /// The wait `/proc/.../syscall` describes: "nr arg1 ... arg6 sp pc" (asleep in call `nr`),
    /// "-1 sp pc" (asleep outside a call, say on a page fault), or "running" (nil: its stack is
    /// captured instead). `stat` and `wchan` only add details.
    static func wait(syscall: String, stat: String?, wchan: String?) -> StallMonitor.KernelWait? {
        let fields = syscall.split(whereSeparator: \.isWhitespace)
        guard let number = fields.first.flatMap({ Int($0) }) else { return nil }
        var wait = StallMonitor.KernelWait(state: stat.flatMap(state(inStat:)) ?? .other("?"))
        if number >= 0 {
            wait.systemCall = number
            wait.systemCallName = systemCallNames[number]
            if fields.count >= 9, let pc = UInt(fields[8].dropFirst(2), radix: 16), pc != 0 {
                wait.caller = StackSampler.symbolicate([pc]).first
            }
        }
        if let wchan, !wchan.isEmpty, wchan != "0" { wait.waitChannel = wchan }
        return wait
    }

    /// The scheduler state in a `stat` line, "tid (comm) S ...": the name may hold spaces and
    /// parentheses; the state follows the last ")".
    private static func state(inStat stat: String) -> StallMonitor.KernelWait.State? {
        guard let close = stat.lastIndex(of: ")") else { return nil }
        return stat[stat.index(after: close)...].first { $0 != " " }.map(StallMonitor.KernelWait.State.init(letter:))
    }

    /// A small `/proc` file, whole, without its trailing newline.
    private static func read(_ path: String) -> String? {
        let fd = DescriptorHeadroom.openBriefly(path)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes = [UInt8](repeating: 0, count: 512)
        let count = bytes.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
        guard count > 0 else { return nil }
        var text = String(decoding: bytes[..<count], as: UTF8.self)
        while text.last == "\n" { text.removeLast() }
        return text
    }

    /// The common blocking system calls, by number on this architecture; for descriptions only
    /// (decisions go by number).
    #if arch(x86_64)
    static let systemCallNames: [Int: String] = [
        0: "read", 1: "write", 2: "open", 7: "poll", 16: "ioctl", 17: "pread64", 18: "pwrite64", 19: "readv",
        20: "writev", 23: "select", 34: "pause", 35: "nanosleep", 42: "connect", 43: "accept", 44: "sendto",
        45: "recvfrom", 46: "sendmsg", 47: "recvmsg", 61: "wait4", 65: "semop", 70: "msgrcv", 72: "fcntl",
        73: "flock", 74: "fsync", 75: "fdatasync", 128: "rt_sigtimedwait", 130: "rt_sigsuspend",
        202: "futex", 208: "io_getevents", 230: "clock_nanosleep", 232: "epoll_wait", 247: "waitid",
        257: "openat", 270: "pselect6", 271: "ppoll", 281: "epoll_pwait", 288: "accept4",
        426: "io_uring_enter", 441: "epoll_pwait2",
    ]
    #elseif arch(arm64)
    static let systemCallNames: [Int: String] = [
        4: "io_getevents", 22: "epoll_pwait", 25: "fcntl", 29: "ioctl", 32: "flock", 56: "openat", 63: "read",
        64: "write", 65: "readv", 66: "writev", 67: "pread64", 68: "pwrite64", 72: "pselect6", 73: "ppoll",
        82: "fsync", 83: "fdatasync", 95: "waitid", 98: "futex", 101: "nanosleep", 115: "clock_nanosleep",
        133: "rt_sigsuspend", 137: "rt_sigtimedwait", 188: "msgrcv", 193: "semop", 202: "accept",
        203: "connect", 206: "sendto", 207: "recvfrom", 211: "sendmsg", 212: "recvmsg", 242: "accept4",
        260: "wait4", 426: "io_uring_enter", 441: "epoll_pwait2",
    ]
    #else
    static let systemCallNames: [Int: String] = [:]
    #endif
}
