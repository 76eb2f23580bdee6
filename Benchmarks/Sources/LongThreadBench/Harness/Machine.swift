import Glibc

/// What the table was measured on.
enum Machine {
    static func description() -> [String] {
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
            "Swift: \(command("swift --version 2>/dev/null").first ?? "unknown (swift not on PATH)")",
            "swift-nio: \(nioVersion() ?? "see Package.resolved")",
            "Load average at start: \(loadAverage())",
        ]
    }

    /// Other work on the machine shows in every figure: say how busy it was.
    static func loadAverage() -> String {
        (ProcFS.read("/proc/loadavg") ?? "").split(separator: " ").prefix(3).joined(separator: " ")
    }

    private static func command(_ line: String) -> [String] {
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
