import Glibc

extension StallMonitor {
    /// Where a stalled thread that was asleep in the kernel waited, read from `/proc` instead of
    /// interrupting it for its stack (``Report/kernelWait``).
    ///
    /// A thread asleep in a system call other than a futex wait is never sent the capture
    /// signal: a handler would cut short what it waits in (a blocking `write` to a full pipe
    /// returns a short count, `usleep` and `poll` return early). The monitor reads
    /// `/proc/self/task/<tid>/stat`, `/proc/self/task/<tid>/syscall` and
    /// `/proc/self/task/<tid>/wchan` instead, which disturbs nothing. (A futex wait, which the
    /// kernel restarts unseen, gets a stack.)
    ///
    /// - Threading: a value; reports are handed to the monitor's handler on its thread.
    public struct KernelWait: Sendable, Hashable, CustomStringConvertible {
        /// The thread's scheduler state letter from `/proc/self/task/<tid>/stat`: `S` (asleep,
        /// interruptible), `D` (asleep, uninterruptible: disk or kernel I/O), `T` or `t`
        /// (stopped, traced).
        public var state: String
        /// The number of the system call it is in, if it is in one (`-1` in the kernel's file:
        /// blocked outside a system call, say on a page fault, gives nil).
        public var systemCall: Int?
        /// The system call's name when the library knows the number (the common blocking calls:
        /// `read`, `write`, `poll`, `futex`, `epoll_wait`, `nanosleep`, `accept`, ...).
        public var systemCallName: String?
        /// The kernel function the thread sleeps in (`wchan`, say `pipe_write` or
        /// `futex_wait_queue`); nil when the kernel hides it (it then reads `0`).
        public var waitChannel: String?
        /// The user-space instruction that made the system call, named (often the C library's
        /// wrapper, such as `write`); nil when the kernel does not say.
        public var caller: Frame?

        /// Whether the thread waits in a futex (a lock, a condition): the kernel restarts that
        /// wait after a handler installed with `SA_RESTART` as if nothing happened, so the
        /// monitor may signal the thread for its stack instead.
        var isRestartedUnseen: Bool { systemCallName == "futex" }

        /// `state S in write (wait channel pipe_write), called from write + 20 (libc.so.6)`.
        public var description: String {
            var text = "state \(state)"
            if let systemCall { text += " in system call \(systemCallName ?? "#\(systemCall)")" }
            if let waitChannel { text += " (wait channel \(waitChannel))" }
            if let caller { text += ", called from \(caller)" }
            return text
        }
    }
}

/// Reads how a thread waits in the kernel from `/proc` (see `StallMonitor.KernelWait`).
enum KernelWaitReader {
    /// The thread's scheduler state letter, or nil if `/proc` cannot be read.
    static func state(ofThread tid: Int32) -> String? {
        guard let stat = read("/proc/self/task/\(tid)/stat"), let close = stat.lastIndex(of: ")") else { return nil }
        // "tid (comm) S ...": the name may hold spaces and parentheses; the state follows the last ")".
        return stat[stat.index(after: close)...].split(separator: " ").first.map(String.init)
    }

    /// How the thread waits, if it is asleep (any state but `R`); nil when it runs or `/proc`
    /// cannot be read.
    static func wait(ofThread tid: Int32) -> StallMonitor.KernelWait? {
        guard let state = state(ofThread: tid), state != "R" else { return nil }
        var wait = StallMonitor.KernelWait(state: state)
        // "nr arg1 ... arg6 sp pc", "-1 sp pc" (blocked outside a call), or "running".
        if let fields = read("/proc/self/task/\(tid)/syscall")?.split(whereSeparator: \.isWhitespace),
           let number = fields.first.flatMap({ Int($0) }), number >= 0 {
            wait.systemCall = number
            wait.systemCallName = systemCallNames[number]
            if fields.count >= 9, let pc = UInt(fields[8].dropFirst(2), radix: 16), pc != 0 {
                wait.caller = StackSampler.symbolicate([pc]).first
            }
        }
        if let channel = read("/proc/self/task/\(tid)/wchan"), !channel.isEmpty, channel != "0" {
            wait.waitChannel = channel
        }
        return wait
    }

    /// A small `/proc` file, whole, without its trailing newline.
    private static func read(_ path: String) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes = [UInt8](repeating: 0, count: 512)
        let count = bytes.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
        guard count > 0 else { return nil }
        var text = String(decoding: bytes[..<count], as: UTF8.self)
        while text.last == "\n" { text.removeLast() }
        return text
    }

    /// The common blocking system calls, by number on this architecture.
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
