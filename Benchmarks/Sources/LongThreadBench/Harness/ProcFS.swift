import CBenchSupport
import Glibc

/// Readings from /proc. They go through open/read rather than Foundation because /proc files
/// report a size of 0 and because they are taken while workers sit idle: no helper threads.
enum ProcFS {
    static func read(_ path: String) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if count <= 0 { break }
            bytes += chunk[0..<count]
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    static func list(_ directory: String) -> [String] {
        guard let dir = opendir(directory) else { return [] }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    /// Resident set size of the process, in bytes (second field of statm, in pages).
    static func residentBytes() -> Int {
        let fields = read("/proc/self/statm")?.split(separator: " ") ?? []
        let pages = fields.count > 1 ? Int(fields[1]) ?? 0 : 0
        return pages * sysconf(Int32(_SC_PAGESIZE))
    }

    static func openDescriptors() -> Int { list("/proc/self/fd").count }

    static func threadIDs() -> [Int32] { list("/proc/self/task").compactMap { Int32($0) } }

    /// What one thread has cost so far: CPU time (schedstat, in ns) and context switches.
    struct ThreadUsage {
        var cpuNanoseconds: Double = 0
        var voluntarySwitches: Double = 0
        var involuntarySwitches: Double = 0

        static func + (a: ThreadUsage, b: ThreadUsage) -> ThreadUsage {
            ThreadUsage(cpuNanoseconds: a.cpuNanoseconds + b.cpuNanoseconds,
                        voluntarySwitches: a.voluntarySwitches + b.voluntarySwitches,
                        involuntarySwitches: a.involuntarySwitches + b.involuntarySwitches)
        }

        static func - (a: ThreadUsage, b: ThreadUsage) -> ThreadUsage {
            ThreadUsage(cpuNanoseconds: a.cpuNanoseconds - b.cpuNanoseconds,
                        voluntarySwitches: a.voluntarySwitches - b.voluntarySwitches,
                        involuntarySwitches: a.involuntarySwitches - b.involuntarySwitches)
        }
    }

    /// Usage of one thread, or nil once it has exited.
    static func usage(ofThread tid: Int32) -> ThreadUsage? {
        let base = "/proc/self/task/\(tid)"
        guard let schedstat = read("\(base)/schedstat"), let status = read("\(base)/status") else { return nil }
        var usage = ThreadUsage()
        usage.cpuNanoseconds = Double(schedstat.split(separator: " ").first ?? "0") ?? 0
        for line in status.split(separator: "\n") {
            let parts = line.split(separator: ":", maxSplits: 1)
            guard parts.count == 2 else { continue }
            let value = parts[1].split(whereSeparator: { $0 == " " || $0 == "\t" }).first.flatMap { Double($0) } ?? 0
            switch parts[0] {
            case "voluntary_ctxt_switches": usage.voluntarySwitches = value
            case "nonvoluntary_ctxt_switches": usage.involuntarySwitches = value
            default: break
            }
        }
        return usage
    }

    /// Pins every thread of the process to `cpu`, or (nil) gives each back its initial affinity.
    /// Threads created afterwards inherit the mask of the thread that creates them.
    /// The hogs of `--hogs` stay unpinned: they load the machine, not the pinned CPU alone.
    static func pinAllThreads(to cpu: Int32?) {
        let hogs = Hogs.threadIDs
        for tid in threadIDs() where !hogs.contains(tid) {
            if let cpu { _ = bench_pin_tid(tid, cpu) } else { _ = bench_unpin_tid(tid) }
        }
    }
}
