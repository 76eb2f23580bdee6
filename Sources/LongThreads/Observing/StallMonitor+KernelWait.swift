import CLongThreadsShims
import Glibc

extension StallMonitor {
    /// Where a stalled thread that was asleep in the kernel waited, read from `/proc`
    /// (``Report/kernelWait``).
    ///
    /// Before it looks at a stalled thread, the monitor reads `/proc/self/task/<tid>/syscall`, and
    /// `/proc/self/task/<tid>/stat` and `/proc/self/task/<tid>/wchan` for the details, which
    /// disturbs nothing. The `syscall` file alone decides how the stack is taken: a thread it
    /// shows running (or a file that cannot be read) takes the capture signal; so does one asleep
    /// in a call the kernel restarts unseen after the handler (a futex wait, a `read` that has
    /// moved nothing, ...); any other wait keeps sleeping while its stack is walked from the
    /// stack pointer and instruction this record gives (see "What a report contains" in
    /// ``StallMonitor``).
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

        /// The kernel's record as read (`/proc/self/task/<tid>/syscall`): read again after a walk,
        /// the same record says the thread slept in the same call all along.
        var record = ""
        /// The system call's six arguments, as the kernel's record gives them (empty outside a call).
        var arguments: [UInt64] = []
        /// The user stack pointer and the instruction after the call, from the kernel's record:
        /// where the walk of a sleeping thread's stack starts. Nil when the record has none.
        var userStackPointer: UInt?
        var userInstruction: UInt?

        /// Whether the kernel restarts this wait after a handler installed with `SA_RESTART` as
        /// if nothing happened, with nothing transferred yet (a futex wait, a `read`, an
        /// `accept`, ...: `CLongThreadsShims_stackCaptureRestartsUnseen`), so that the monitor may
        /// signal the thread for its stack. Decided by number, so that it holds on every
        /// architecture.
        var isRestartedUnseen: Bool {
            guard let systemCall else { return false }
            var arguments = arguments
            arguments += repeatElement(0, count: max(0, 6 - arguments.count))
            return CLongThreadsShims_stackCaptureRestartsUnseen(systemCall, arguments)
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
        guard let syscall = systemCallRecord(ofThread: tid) else { return nil }
        return wait(syscall: syscall, stat: read("\(task)/stat"), wchan: read("\(task)/wchan"))
    }

    /// The thread's `/proc/self/task/<tid>/syscall` line: read again after a walk, the same line
    /// says the thread slept in the same call all along.
    static func systemCallRecord(ofThread tid: Int32) -> String? {
        read("/proc/self/task/\(tid)/syscall")
    }

    /// The wait `/proc/.../syscall` describes: "nr arg1 ... arg6 sp pc" (asleep in call `nr`),
    /// "-1 sp pc" (asleep outside a call, say on a page fault), or "running" (nil: its stack is
    /// captured instead). `stat` and `wchan` only add details.
    static func wait(syscall: String, stat: String?, wchan: String?) -> StallMonitor.KernelWait? {
        let fields = syscall.split(whereSeparator: \.isWhitespace)
        guard let number = fields.first.flatMap({ Int($0) }) else { return nil }
        var wait = StallMonitor.KernelWait(state: stat.flatMap(state(inStat:)) ?? .other("?"))
        wait.record = syscall
        let addresses = fields.dropFirst().map { UInt64($0.dropFirst(2), radix: 16) }
        if number >= 0 {
            wait.systemCall = number
            wait.systemCallName = systemCallNames[number]
            wait.arguments = addresses.prefix(6).map { $0 ?? 0 }
        }
        // The last two fields: the user stack pointer and the instruction after the call.
        if addresses.count >= 2, let sp = addresses[addresses.count - 2], let pc = addresses[addresses.count - 1],
           sp != 0, pc != 0 {
            wait.userStackPointer = UInt(sp)
            wait.userInstruction = UInt(pc)
            if number >= 0 { wait.caller = StackSampler.symbolicate([UInt(pc)]).first }
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
        guard var text = ProcFile.read(path) else { return nil }
        while text.last == "\n" { text.removeLast() }
        return text.isEmpty ? nil : text
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
