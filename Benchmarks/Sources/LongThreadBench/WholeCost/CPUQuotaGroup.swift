import Glibc

/// Why the quota pass cannot run here; the report prints it instead of figures.
struct QuotaUnavailable: Error, CustomStringConvertible {
    let reason: String
    var description: String { reason }
}

/// A child cgroup with a CFS CPU quota, made for one pass of the benchmark and removed after.
///
/// cgroup v1 (a `cpu` controller hierarchy, e.g. /sys/fs/cgroup/cpu): `cpu.cfs_quota_us` is set
/// to the fraction of the parent's `cpu.cfs_period_us`, and threads move one by one through the
/// group's `tasks` file (the hogs of `--hogs` stay out). cgroup v2 (a hierarchy whose
/// `cgroup.controllers` lists cpu): `cpu.max`, and the whole process moves through
/// `cgroup.procs` (v2 moves processes, not threads: the hogs go in too). Threads created inside
/// the group stay in it, so a contender started during the pass is inside as well.
struct CPUQuotaGroup {
    enum Version: Equatable { case v1, v2 }

    let version: Version
    /// The group's directory.
    let path: String
    /// The group the process was in, where members go back to.
    let home: String
    /// What was written to the quota file.
    let quota: String
    /// Removes a group's directory (rmdir on a real cgroup file system, where the control files
    /// go with it); 0 or -1 with errno, as rmdir.
    let removeDirectory: (String) -> Int32

    var membersFile: String { version == .v1 ? "tasks" : "cgroup.procs" }

    /// Makes the group `name` below the cpu hierarchy under `root` with a quota of `fraction` of
    /// one CPU. A group of that name left by a run that crashed is emptied and replaced.
    /// `membership` is the text of /proc/self/cgroup (where this process is now).
    static func make(root: String, name: String, fraction: Double, membership: String,
                     removeDirectory: @escaping (String) -> Int32) throws(QuotaUnavailable) -> CPUQuotaGroup {
        let (version, hierarchy) = try locate(root: root)
        let home = hierarchy + currentPath(version: version, membership: membership)
        let path = hierarchy + "/" + name
        let (quota, quotaFile) = quotaSetting(version: version, hierarchy: hierarchy, fraction: fraction)
        let group = CPUQuotaGroup(version: version, path: path, home: home, quota: quota, removeDirectory: removeDirectory)
        var made = mkdir(path, 0o755) == 0
        if !made && errno == EEXIST {
            try group.dissolve()  // a crashed run's group
            made = mkdir(path, 0o755) == 0
        }
        guard made else { throw QuotaUnavailable(reason: "cannot create \(path): \(errorText())") }
        do {
            try write(quota, to: path + "/" + quotaFile, append: false)
        } catch {
            _ = removeDirectory(path)
            throw error
        }
        return group
    }

    /// Moves `threads` (v1) or this process (v2) into the group. Threads that have ended are
    /// passed over.
    func admit(threads: [Int32]) throws(QuotaUnavailable) {
        let members = version == .v1 ? threads : [getpid()]
        for member in members { try Self.write(String(member), to: path + "/" + membersFile, append: true, ignoringGone: true) }
    }

    /// Moves every member of the group back home, then removes it.
    func dissolve() throws(QuotaUnavailable) {
        let members = (Self.readTrimmed(path + "/" + membersFile) ?? "").split(separator: "\n")
        for member in members {
            try Self.write(String(member), to: home + "/" + membersFile, append: true, ignoringGone: true)
        }
        guard removeDirectory(path) == 0 else {
            throw QuotaUnavailable(reason: "cannot remove \(path): \(Self.errorText())")
        }
    }

    /// The group's throttling counters (cpu.stat: periods, throttled periods, throttled time).
    func throttling() -> String {
        let stat = Self.readTrimmed(path + "/cpu.stat") ?? ""
        return stat.split(separator: "\n").filter { $0.hasPrefix("nr_") || $0.hasPrefix("throttled") }
            .joined(separator: ", ")
    }

    // MARK: Steps

    /// The quota's text and file: v1 a share of the hierarchy's period, v2 "quota period".
    static func quotaSetting(version: Version, hierarchy: String, fraction: Double) -> (value: String, file: String) {
        switch version {
        case .v1:
            let period = Int(readTrimmed(hierarchy + "/cpu.cfs_period_us") ?? "") ?? 100_000
            return (String(Int(Double(period) * fraction)), "cpu.cfs_quota_us")
        case .v2:
            return ("\(Int(100_000 * fraction)) 100000", "cpu.max")
        }
    }

    /// The cpu hierarchy under `root`: v1's `cpu` controller (alone or co-mounted, e.g.
    /// "cpu,cpuacct"), else a v2 hierarchy (`root` itself or `root/unified`) that offers cpu.
    static func locate(root: String) throws(QuotaUnavailable) -> (Version, String) {
        let v1 = ["cpu", "cpu,cpuacct", "cpuacct,cpu"].map { root + "/" + $0 }
        if let controller = v1.first(where: { access($0 + "/cpu.cfs_quota_us", F_OK) == 0 }) { return (.v1, controller) }
        for hierarchy in [root, root + "/unified"] {
            let controllers = readTrimmed(hierarchy + "/cgroup.controllers") ?? ""
            if controllers.split(separator: " ").contains("cpu") {
                // Children get the cpu controller only if the parent hands it down.
                try? write("+cpu", to: hierarchy + "/cgroup.subtree_control", append: false)
                return (.v2, hierarchy)
            }
        }
        throw QuotaUnavailable(reason: "no cgroup cpu controller under \(root) (neither v1 cpu/cpu.cfs_quota_us "
                               + "nor a v2 cgroup.controllers listing cpu)")
    }

    /// This process's group in the hierarchy, from /proc/self/cgroup ("id:controllers:path").
    static func currentPath(version: Version, membership: String) -> String {
        for line in membership.split(separator: "\n") {
            let fields = line.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false)
            guard fields.count == 3 else { continue }
            let matches = version == .v2 ? fields[0] == "0" && fields[1].isEmpty
                : fields[1].split(separator: ",").contains("cpu")
            if matches { return fields[2] == "/" ? "" : String(fields[2]) }
        }
        return ""
    }

    static func write(_ text: String, to file: String, append: Bool, ignoringGone: Bool = false) throws(QuotaUnavailable) {
        let fd = open(file, O_WRONLY | O_CREAT | O_CLOEXEC | (append ? O_APPEND : O_TRUNC), 0o644)
        guard fd >= 0 else { throw QuotaUnavailable(reason: "cannot open \(file): \(errorText())") }
        defer { close(fd) }
        var bytes = Array((text + "\n").utf8)
        let written = Glibc.write(fd, &bytes, bytes.count)
        // ESRCH: the thread ended since it was listed.
        if written != bytes.count && !(ignoringGone && errno == ESRCH) {
            throw QuotaUnavailable(reason: "cannot write \(text) to \(file): \(errorText())")
        }
    }

    /// A control file's text without its trailing newline, or nil if it cannot be read.
    static func readTrimmed(_ file: String) -> String? {
        guard access(file, R_OK) == 0, var text = ProcFS.read(file) else { return nil }
        while text.last == "\n" || text.last == " " { text.removeLast() }
        return text
    }

    static func errorText() -> String { String(cString: strerror(errno)) }
}

extension CPUQuotaGroup {
    /// Runs `body` with `threads()` inside a new quota group, and removes the group after,
    /// whether `body` returns or throws. A failure to set the group up is a `QuotaUnavailable`.
    static func with<T>(root: String = "/sys/fs/cgroup", name: String = "longthread-bench-quota", fraction: Double,
                        membership: String = ProcFS.read("/proc/self/cgroup") ?? "",
                        removeDirectory: @escaping (String) -> Int32 = { rmdir($0) },
                        threads: () -> [Int32], _ body: (CPUQuotaGroup) throws -> T) throws -> T {
        let group = try make(root: root, name: name, fraction: fraction, membership: membership,
                             removeDirectory: removeDirectory)
        let result: Result<T, any Error>
        do {
            try group.admit(threads: threads())
            result = .success(try body(group))
        } catch {
            result = .failure(error)
        }
        try group.dissolve()
        return try result.get()
    }
}
