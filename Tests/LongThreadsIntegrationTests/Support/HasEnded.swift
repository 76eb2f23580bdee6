import CLongThreadsShims
import Foundation
import LongThreads

extension LongThread {
    /// Whether the thread has ended and been joined, without waiting: the blocking
    /// `waitUntilExit(timeout: .zero)` is `noasync`, so async tests ask through this synchronous getter.
    var hasEnded: Bool { waitUntilExit(timeout: .zero) }
}

/// Whether the kernel thread `tid` of this process is asleep (state `S`): a post then wakes its loop.
func threadIsSleeping(_ tid: Int32) -> Bool {
    // Plain reads: Foundation's `String(contentsOfFile:)` leaks its buffer on procfs files (size 0).
    let fd = open("/proc/self/task/\(tid)/stat", O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { return false }
    defer { close(fd) }
    var buffer = [UInt8](repeating: 0, count: 1024)
    let count = read(fd, &buffer, buffer.count)
    guard count > 0 else { return false }
    let stat = String(decoding: buffer[0..<count], as: UTF8.self)
    // The state follows the command name in parentheses, which may itself contain spaces.
    return stat.split(separator: ")").last?.split(separator: " ").first == "S"
}

extension LongThread {
    /// The kernel id of this thread, asked on the thread.
    func kernelThreadID() throws -> Int32 {
        try sync { CLongThreadsShims_gettid() }
    }
}
