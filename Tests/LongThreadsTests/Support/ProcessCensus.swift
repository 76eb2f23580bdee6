import CLongThreadsShims
import Foundation

/// What the kernel says about this process's threads and descriptors.
enum ProcessCensus {
    /// The kernel ids of this process's threads.
    static var threadIDs: [Int32] {
        ((try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []).compactMap { Int32($0) }
    }

    static var threadCount: Int { threadIDs.count }

    /// The kernel name (`comm`) of each thread.
    static var threadNames: [String] {
        threadIDs.compactMap { name(ofThread: $0) }
    }

    static func name(ofThread tid: Int32) -> String? {
        (try? String(contentsOfFile: "/proc/self/task/\(tid)/comm", encoding: .utf8))?
            .trimmingCharacters(in: .newlines)
    }

    static func threadExists(_ tid: Int32) -> Bool {
        FileManager.default.fileExists(atPath: "/proc/self/task/\(tid)")
    }

    /// True once the kernel has reaped thread `tid`. `pthread_join` returns when the kernel clears
    /// the thread's id, a moment before its `/proc` entry goes, so this allows that moment (bounded).
    static func threadGone(_ tid: Int32) -> Bool {
        waitUntil(timeout: .seconds(2)) { !threadExists(tid) }
    }

    static var descriptorCount: Int {
        ((try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []).count
    }

    /// Voluntary context switches of thread `tid`: how often it slept and was woken.
    static func voluntarySwitches(ofThread tid: Int32) -> Int? {
        guard let status = try? String(contentsOfFile: "/proc/self/task/\(tid)/status", encoding: .utf8) else { return nil }
        for line in status.split(separator: "\n") where line.hasPrefix("voluntary_ctxt_switches:") {
            return Int(line.split(separator: ":")[1].trimmingCharacters(in: .whitespaces))
        }
        return nil
    }

    static var currentThreadID: Int32 { CLongThreadsShims_gettid() }
}
