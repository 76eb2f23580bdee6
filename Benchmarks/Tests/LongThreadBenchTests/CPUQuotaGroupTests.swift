import Foundation
import Glibc
import Testing

@testable import LongThreadBench

/// The quota group against a fake cgroup file system: a temporary directory laid out as the
/// kernel lays one out. A real group directory loses its control files with it; the fake's
/// `removeDirectory` does the same.
@Suite("The CPU quota group")
struct CPUQuotaGroupTests {
    struct Fake {
        let root: String
        let removed = Box()

        final class Box: @unchecked Sendable { var paths: [String] = [] }

        init(v1: Bool) throws {
            root = NSTemporaryDirectory() + "cgroup-fake-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
            let manager = FileManager.default
            if v1 {
                try manager.createDirectory(atPath: root + "/cpu", withIntermediateDirectories: true)
                try "100000\n".write(toFile: root + "/cpu/cpu.cfs_period_us", atomically: false, encoding: .utf8)
                try "-1\n".write(toFile: root + "/cpu/cpu.cfs_quota_us", atomically: false, encoding: .utf8)
                try "".write(toFile: root + "/cpu/tasks", atomically: false, encoding: .utf8)
            } else {
                try manager.createDirectory(atPath: root + "/service.slice", withIntermediateDirectories: true)
                try "cpuset cpu io memory\n".write(toFile: root + "/cgroup.controllers", atomically: false, encoding: .utf8)
            }
        }

        /// rmdir as cgroupfs does it: the control files go with the directory.
        var remove: (String) -> Int32 {
            { [removed] path in
                removed.paths.append(path)
                for name in (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? [] {
                    unlink(path + "/" + name)
                }
                return rmdir(path)
            }
        }

        func read(_ path: String) -> String { (try? String(contentsOfFile: root + path, encoding: .utf8)) ?? "<missing>" }
        func exists(_ path: String) -> Bool { access(root + path, F_OK) == 0 }
        func cleanUp() { try? FileManager.default.removeItem(atPath: root) }
    }

    struct Failure: Error {}

    @Test("v1: quota set, threads moved in, moved back and the group removed")
    func v1RoundTrip() throws {
        let fake = try Fake(v1: true)
        defer { fake.cleanUp() }
        let seen = try CPUQuotaGroup.with(root: fake.root, name: "q", fraction: 0.5, membership: "3:cpu,cpuacct:/\n",
                                          removeDirectory: fake.remove, threads: { [11, 12] }) { group in
            #expect(group.version == .v1)
            return (fake.read("/cpu/q/cpu.cfs_quota_us"), fake.read("/cpu/q/tasks"))
        }
        #expect(seen.0 == "50000\n")
        #expect(seen.1 == "11\n12\n")
        #expect(!fake.exists("/cpu/q"), "the group is still there")
        #expect(fake.read("/cpu/tasks") == "11\n12\n", "the threads did not go back")
    }

    @Test("The group is removed when the pass fails, and the failure comes through")
    func removedOnError() throws {
        let fake = try Fake(v1: true)
        defer { fake.cleanUp() }
        #expect(throws: Failure.self) {
            try CPUQuotaGroup.with(root: fake.root, name: "q", fraction: 0.5, membership: "", removeDirectory: fake.remove,
                                   threads: { [21] }) { (_: CPUQuotaGroup) throws -> Int in throw Failure() }
        }
        #expect(!fake.exists("/cpu/q"), "the group outlived the failure")
        #expect(fake.read("/cpu/tasks") == "21\n")
    }

    @Test("A group left by a crashed run is emptied and replaced")
    func staleGroup() throws {
        let fake = try Fake(v1: true)
        defer { fake.cleanUp() }
        try FileManager.default.createDirectory(atPath: fake.root + "/cpu/q", withIntermediateDirectories: false)
        try "99\n".write(toFile: fake.root + "/cpu/q/tasks", atomically: false, encoding: .utf8)
        let group = try CPUQuotaGroup.make(root: fake.root, name: "q", fraction: 0.25, membership: "",
                                           removeDirectory: fake.remove)
        #expect(fake.read("/cpu/tasks") == "99\n", "the stale member was not moved home")
        #expect(fake.read("/cpu/q/cpu.cfs_quota_us") == "25000\n")
        #expect(fake.read("/cpu/q/tasks") == "<missing>", "the stale group was not replaced")
        try group.dissolve()
        #expect(fake.removed.paths == [fake.root + "/cpu/q", fake.root + "/cpu/q"])
    }

    @Test("v2: cpu.max set, the process moved in and back to its own group")
    func v2RoundTrip() throws {
        let fake = try Fake(v1: false)
        defer { fake.cleanUp() }
        let seen = try CPUQuotaGroup.with(root: fake.root, name: "q", fraction: 0.5, membership: "0::/service.slice\n",
                                          removeDirectory: fake.remove, threads: { [11] }) { group in
            #expect(group.version == .v2)
            return (fake.read("/q/cpu.max"), fake.read("/q/cgroup.procs"))
        }
        #expect(seen.0 == "50000 100000\n")
        #expect(seen.1 == "\(getpid())\n")
        #expect(fake.read("/cgroup.subtree_control") == "+cpu\n")
        #expect(fake.read("/service.slice/cgroup.procs") == "\(getpid())\n")
        #expect(!fake.exists("/q"))
    }

    @Test("No cpu controller: the reason, and nothing made")
    func unavailable() throws {
        let root = NSTemporaryDirectory() + "cgroup-empty-\(getpid())"
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: root) }
        #expect(throws: QuotaUnavailable.self) {
            try CPUQuotaGroup.make(root: root, name: "q", fraction: 0.5, membership: "", removeDirectory: { rmdir($0) })
        }
        #expect((try? FileManager.default.contentsOfDirectory(atPath: root)) == [])
        // The pass reports the reason instead of figures.
        let outcome = QuotaPass.run([LongThreadContender.self], Settings(), root: root)
        #expect(outcome.results.isEmpty)
        #expect(outcome.note.hasPrefix("skipped: no cgroup cpu controller"), "\(outcome.note)")
    }

    @Test("This process's group is read from /proc/self/cgroup")
    func currentPath() {
        let membership = "12:pids:/a\n3:cpu,cpuacct:/b/c\n0::/d\n"
        #expect(CPUQuotaGroup.currentPath(version: .v1, membership: membership) == "/b/c")
        #expect(CPUQuotaGroup.currentPath(version: .v2, membership: membership) == "/d")
        #expect(CPUQuotaGroup.currentPath(version: .v1, membership: "1:cpu:/\n") == "")
    }
}

@Suite("The results file")
struct ResultsTests {
    @Test("A full run writes RESULTS.md; a partial run only where told; --no-results never")
    func destination() {
        var settings = Settings()
        #expect(Results.destination(settings) == Results.defaultPath)
        #expect(Results.defaultPath.hasSuffix("/Benchmarks/RESULTS.md"))
        settings.quick = true
        #expect(Results.destination(settings) == nil)
        settings.resultsPath = "/tmp/r.md"
        #expect(Results.destination(settings) == "/tmp/r.md")
        settings = Settings()
        settings.noResults = true
        #expect(Results.destination(settings) == nil)
    }

    @Test("The conditions say when the machine was not quiet, and what the run left out")
    func conditions() {
        var settings = Settings()
        settings.only = ["paced"]
        settings.note = "builds running"
        let text = Results.document(report: "| table |\n", settings: settings, machine: ["CPU: x"], loadAtEnd: "3.1",
                                    busiestAtEnd: "swift-frontend 90%", otherCPUs: 1.6)
        #expect(text.contains("**Quiet machine: no**"))
        #expect(text.contains("partial (--only paced)"))
        #expect(text.contains("- Note: builds running"))
        #expect(text.hasSuffix("| table |\n"))
        let quiet = Results.document(report: "", settings: Settings(), machine: [], loadAtEnd: "0.1",
                                     busiestAtEnd: "", otherCPUs: 0.02)
        #expect(quiet.contains("Quiet machine: yes") && quiet.contains("- Run: full"))
    }

    @Test("Arguments are quoted as a shell needs them")
    func quoting() {
        #expect(Results.shellQuoted("--only") == "--only")
        #expect(Results.shellQuoted("wholecost,paced") == "wholecost,paced")
        #expect(Results.shellQuoted("busy machine") == "'busy machine'")
        #expect(Results.shellQuoted("it's") == "'it'\\''s'")
    }

    @Test("Other work is the machine's busy CPU less this process's, over the wall time")
    func otherWork() {
        let stat = "cpu  300 0 100 5000 50 0 0 0 0 0\ncpu0 1 2 3\n"
        let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
        #expect(OtherWork.machineBusySeconds(stat) == 400 / ticks)
        let start = OtherWork.Sample(machine: 10, own: 2, wall: 100)
        let end = OtherWork.Sample(machine: 16, own: 4, wall: 102)
        #expect(OtherWork.averageCPUs(from: start, to: end) == 2)  // (6 - 2) CPU-seconds over 2 s
        #expect(OtherWork.averageCPUs(from: start, to: start) == 0)
    }
}
