import Glibc

/// Benchmarks/RESULTS.md: the latest full run's report, with the conditions it was measured in,
/// replaced by each full run. A partial run (`--only`, `--quick`) writes it only when given
/// `--results FILE`, and says so in its header.
enum Results {
    /// The Benchmarks package directory of the source tree this executable was built from.
    static let packageDirectory: String = {
        // #filePath: …/Benchmarks/Sources/LongThreadBench/Harness/Results.swift
        var parts = "\(#filePath)".split(separator: "/", omittingEmptySubsequences: false)
        parts.removeLast(4)
        return parts.joined(separator: "/")
    }()

    static var defaultPath: String { packageDirectory + "/RESULTS.md" }

    /// Where this run writes its results, or nil when it writes none.
    static func destination(_ settings: Settings) -> String? {
        if settings.noResults { return nil }
        if let path = settings.resultsPath { return path }
        return settings.isFullRun ? defaultPath : nil
    }

    /// The file's text: a title, the conditions, then the report as printed.
    static func document(report: String, settings: Settings, machine: [String], loadAtEnd: String,
                         busiestAtEnd: String, otherCPUs: Double) -> String {
        var lines = ["# LongThread benchmark results", "",
                     "Written by `longthread-bench`; each full run replaces this file (see Benchmarks/README.md).", "",
                     "## Conditions", ""]
        lines.append("- Command: `" + (["longthread-bench"] + CommandLine.arguments.dropFirst().map(shellQuoted)).joined(separator: " ") + "`")
        lines.append("- Run: " + (settings.isFullRun ? "full" : "partial (\(partialReason(settings))): not every figure, not full sizes"))
        lines += machine.map { "- \($0)" }
        lines.append("- Load average at the end: \(loadAtEnd)")
        lines.append("- Busiest other processes at the end: \(busiestAtEnd)")
        let cores = Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))
        let others = "other processes used \(String(format2: otherCPUs)) of the \(cores) CPUs on average during the run"
        lines.append(otherCPUs < quietLimit
            ? "- Quiet machine: yes (\(others))"
            : "- **Quiet machine: no** (\(others)): these figures are not final")
        if let note = settings.note { lines.append("- Note: \(note)") }
        return lines.joined(separator: "\n") + "\n\n" + report
    }

    /// Other work, in CPUs on average, below which a machine counts as quiet.
    static let quietLimit = 0.1

    /// An argument as a shell would need it (single quotes when it holds anything but plain characters).
    static func shellQuoted(_ argument: String) -> String {
        let plain = argument.allSatisfy { $0.isLetter || $0.isNumber || "-_.,/=:@+".contains($0) }
        return plain && !argument.isEmpty ? argument : "'" + argument.replacing("'", with: "'\\''") + "'"
    }

    static func partialReason(_ settings: Settings) -> String {
        var reasons: [String] = []
        if settings.quick { reasons.append("--quick") }
        if !settings.only.isEmpty { reasons.append("--only " + settings.only.joined(separator: ",")) }
        return reasons.joined(separator: ", ")
    }

    /// Writes `text` to `path` through a temporary file and a rename, so a run that dies midway
    /// leaves the previous results whole. Returns nil, or why it failed.
    static func write(_ text: String, to path: String) -> String? {
        let temporary = path + ".partial"
        guard let file = fopen(temporary, "w") else { return "cannot write \(temporary): \(CPUQuotaGroup.errorText())" }
        fputs(text, file)
        guard fclose(file) == 0, rename(temporary, path) == 0 else {
            return "cannot write \(path): \(CPUQuotaGroup.errorText())"
        }
        return nil
    }
}
