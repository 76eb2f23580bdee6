import Glibc

/// What the table was measured on.
enum Machine {
    static func description(hogs conditions: [Int]) -> [String] {
        let cpuinfo = ProcFS.read("/proc/cpuinfo") ?? ""
        let model = cpuinfo.split(separator: "\n").first { $0.hasPrefix("model name") }?
            .split(separator: ":", maxSplits: 1).last.map { $0.drop(while: { $0 == " " }) } ?? "unknown"
        var names = utsname()
        uname(&names)
        let kernel = withUnsafeBytes(of: names.release) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        let cores = sysconf(Int32(_SC_NPROCESSORS_ONLN))
        return [
            "CPU: \(model), \(cores) online cores",
            "Kernel: Linux \(kernel)",
            "Date: \(dateUTC())",
            "Commit: \(commit())",
            "Swift: \(command("swift --version 2>/dev/null").first ?? "unknown (swift not on PATH)")",
            "swift-nio: \(nioVersion() ?? "see Package.resolved")",
            "Load average at start: \(loadAverage()) (1, 5, 15 min; runnable/total threads)",
            "Condition\(conditions.count == 1 ? "" : "s, in turn"): " + conditions.map(condition).joined(separator: "; then "),
            "Busiest other processes at start (ps, % CPU since they began): " + busiestProcesses(),
        ]
    }

    /// Now, as "2026-11-27 08:40 UTC".
    static func dateUTC() -> String {
        var now = time(nil)
        var parts = tm()
        gmtime_r(&now, &parts)
        var buffer = [CChar](repeating: 0, count: 64)
        let count = strftime(&buffer, buffer.count, "%Y-%m-%d %H:%M UTC", &parts)
        return String(decoding: buffer.prefix(count).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The commit of the checkout this benchmark was built from, and whether it had changes.
    static func commit() -> String {
        let directory = Results.packageDirectory
        guard let hash = command("git -C '\(directory)' rev-parse --short HEAD 2>/dev/null").first else { return "unknown" }
        let dirty = !command("git -C '\(directory)/..' status --porcelain --untracked-files=no 2>/dev/null").isEmpty
        return hash + (dirty ? " with uncommitted changes" : "")
    }

    static func condition(hogs: Int) -> String {
        hogs == 0 ? "no hogs" : "\(hogs) CPU-bound hog thread\(hogs == 1 ? "" : "s") in this process, "
            + "running during every measurement (`--hogs \(hogs)`)"
    }

    /// Other work on the machine shows in every figure: say how busy it was (with the runnable
    /// and total thread counts of /proc/loadavg's fourth field).
    static func loadAverage() -> String {
        (ProcFS.read("/proc/loadavg") ?? "").split(separator: " ").prefix(4).joined(separator: " ")
    }

    /// What else ran: the five processes with the most CPU, other than this one.
    static func busiestProcesses() -> String {
        let me = getpid()
        let lines = command("ps -eo pid=,pcpu=,comm= --sort=-pcpu 2>/dev/null")
        let others = lines.compactMap { line -> String? in
            let fields = line.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: true)
            guard fields.count == 3, Int32(fields[0]) != me else { return nil }
            return "\(fields[2]) \(fields[1])%"
        }
        return others.isEmpty ? "unknown" : others.prefix(5).joined(separator: ", ")
    }

    static func command(_ line: String) -> [String] {
        guard let pipe = popen(line, "r") else { return [] }
        defer { pclose(pipe) }
        var output = ""
        var buffer = [CChar](repeating: 0, count: 512)
        while fgets(&buffer, Int32(buffer.count), pipe) != nil {
            output += String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        }
        return output.split(separator: "\n").map(String.init)
    }

    /// The resolved version, read from the Package.resolved that `swift run` leaves beside us.
    private static func nioVersion() -> String? {
        guard let resolved = ProcFS.read("Package.resolved"),
              let entry = resolved.firstRange(of: "\"identity\" : \"swift-nio\"") else { return nil }
        let rest = resolved[entry.upperBound...]
        guard let key = rest.firstRange(of: "\"version\" : \"") else { return nil }
        return String(rest[key.upperBound...].prefix { $0 != "\"" })
    }
}
