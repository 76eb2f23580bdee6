import CLongThreadsShims
import Foundation

/// What the kernel says about this process's threads and descriptors.
package enum ProcessCensus {
    /// The kernel ids of this process's threads.
    package static var threadIDs: [Int32] {
        ((try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []).compactMap { Int32($0) }
    }

    package static var threadCount: Int { threadIDs.count }

    /// The kernel name (`comm`) of each thread.
    package static var threadNames: [String] {
        threadIDs.compactMap { name(ofThread: $0) }
    }

    package static func name(ofThread tid: Int32) -> String? {
        read("/proc/self/task/\(tid)/comm")?.trimmingCharacters(in: .newlines)
    }

    /// The contents of a small /proc file. Plain POSIX reads: Foundation's
    /// `String(contentsOfFile:)` leaks its buffer for procfs files, which report a size of 0.
    package static func read(_ path: String) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = Glibc.read(fd, &buffer, buffer.count)
            if n <= 0 { break }
            bytes += buffer[0..<n]
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    package static func threadExists(_ tid: Int32) -> Bool {
        FileManager.default.fileExists(atPath: "/proc/self/task/\(tid)")
    }

    /// True once the kernel has reaped thread `tid`. `pthread_join` returns when the kernel clears
    /// the thread's id, a moment before its `/proc` entry goes, so this allows that moment (bounded).
    package static func threadGone(_ tid: Int32) -> Bool {
        waitUntil(timeout: .seconds(2)) { !threadExists(tid) }
    }

    package static var descriptorCount: Int {
        ((try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []).count
    }

    /// Voluntary context switches of thread `tid`: how often it slept and was woken.
    package static func voluntarySwitches(ofThread tid: Int32) -> Int? {
        guard let status = read("/proc/self/task/\(tid)/status") else { return nil }
        for line in status.split(separator: "\n") where line.hasPrefix("voluntary_ctxt_switches:") {
            return Int(line.split(separator: ":")[1].trimmingCharacters(in: .whitespaces))
        }
        return nil
    }

    package static var currentThreadID: Int32 { CLongThreadsShims_gettid() }
}

/// Whether the kernel thread `tid` of this process is asleep (state `S`), for whatever reason: in
/// its run loop's wait, in the library's park (a futex), on a lock. For a loop asleep where a post
/// wakes it through CF, see `loopIsAsleep`.
package func threadIsSleeping(_ tid: Int32) -> Bool {
    // The state follows the command name in parentheses, which may itself contain spaces.
    ProcessCensus.read("/proc/self/task/\(tid)/stat")
        .flatMap { $0.split(separator: ")").last?.split(separator: " ").first } == "S"
}

/// Whether the loop thread `tid` is asleep in its run loop's wait (CF's `ppoll` of its epoll set), where a post
/// wakes it through CF and an instrument hears `wokeUp`. Not when it is parked (a futex wait, left
/// without waking the loop) or has yet to reach its first wait: a test that takes any sleep for the
/// loop's fails when the posts come while the new loop is parked (`instrumentEvents` did, 1 run in
/// 3 under load).
package func loopIsAsleep(_ tid: Int32) -> Bool {
    guard threadIsSleeping(tid),
          let call = ProcessCensus.read("/proc/self/task/\(tid)/syscall")?.split(separator: " ").first.flatMap({ Int($0) })
    else { return false }
    return loopWaitCalls.contains(call)
}

/// The calls CF's wait may sleep in, by number on this architecture: `ppoll` (what CF on Linux
/// uses, on its epoll set), `poll`, `epoll_wait`, `epoll_pwait`, `epoll_pwait2`.
#if arch(x86_64)
private let loopWaitCalls: Set<Int> = [271, 7, 232, 281, 441]
#elseif arch(arm64)
private let loopWaitCalls: Set<Int> = [73, 22, 441]
#else
private let loopWaitCalls: Set<Int> = []
#endif
