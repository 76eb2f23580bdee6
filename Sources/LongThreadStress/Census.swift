import Foundation

/// What the kernel says about the process: threads, descriptors, memory.
enum Census {
    static var threads: Int { entries("/proc/self/task") }
    static var descriptors: Int { entries("/proc/self/fd") }

    /// Resident set now and at its peak, in KiB (VmRSS, VmHWM).
    /// Resident memory after handing the heap's free pages back (`malloc_trim`): the drift then
    /// shows memory still in use, not pages glibc keeps in its arenas after a million-item cycle
    /// (one arena per runner with `--parallel`).
    static var trimmedMemory: (rss: Int, peak: Int) {
        _ = mallocTrim(0)
        return memory
    }

    static var memory: (rss: Int, peak: Int) {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return (0, 0) }
        var rss = 0, peak = 0
        for line in status.split(separator: "\n") {
            let parts = line.split(separator: " ", omittingEmptySubsequences: true)
            if line.hasPrefix("VmRSS:"), parts.count > 1 { rss = Int(parts[1]) ?? 0 }
            if line.hasPrefix("VmHWM:"), parts.count > 1 { peak = Int(parts[1]) ?? 0 }
        }
        return (rss, peak)
    }

    /// Each thread's id, name and kernel wait channel, for a hang report.
    static var threadReport: String {
        let ids = ((try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []).sorted()
        return ids.map { id in
            let comm = (try? String(contentsOfFile: "/proc/self/task/\(id)/comm", encoding: .utf8))?
                .trimmingCharacters(in: .newlines) ?? "?"
            let wchan = (try? String(contentsOfFile: "/proc/self/task/\(id)/wchan", encoding: .utf8)) ?? "?"
            return "  tid \(id) \(comm) waiting in \(wchan.isEmpty ? "-" : wchan)"
        }.joined(separator: "\n")
    }

    private static func entries(_ path: String) -> Int {
        ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).count
    }
}

/// glibc's `malloc_trim`, which the Glibc module does not export.
@_silgen_name("malloc_trim")
private func mallocTrim(_ pad: Int) -> Int32
