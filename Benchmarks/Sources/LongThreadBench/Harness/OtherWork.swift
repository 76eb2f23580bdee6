import Glibc

/// What else ran during a run: the CPU the whole machine spent (/proc/stat) less what this
/// process and its children spent (getrusage), over the wall time. The load average cannot say
/// it: it counts the benchmark's own threads.
enum OtherWork {
    struct Sample {
        /// Seconds of CPU the machine spent, all CPUs (user, nice, system, irq, softirq, steal).
        var machine: Double
        /// Seconds of CPU this process and its reaped children spent.
        var own: Double
        /// Monotonic wall clock, in seconds.
        var wall: Double
    }

    static func sample() -> Sample {
        Sample(machine: machineBusySeconds(ProcFS.read("/proc/stat") ?? ""), own: ownSeconds(),
               wall: Double(nowNanoseconds()) / 1e9)
    }

    /// Other work's CPUs on average between two samples (0 when no time passed).
    static func averageCPUs(from start: Sample, to end: Sample) -> Double {
        let wall = end.wall - start.wall
        guard wall > 0 else { return 0 }
        return max(0, (end.machine - start.machine) - (end.own - start.own)) / wall
    }

    /// The busy seconds of /proc/stat's first line ("cpu  user nice system idle iowait irq
    /// softirq steal ..." in clock ticks); idle and iowait are not busy.
    static func machineBusySeconds(_ stat: String) -> Double {
        guard let line = stat.split(separator: "\n").first, line.hasPrefix("cpu ") else { return 0 }
        let ticks = line.split(separator: " ").dropFirst().map { Double($0) ?? 0 }
        let busy = [0, 1, 2, 5, 6, 7].filter { $0 < ticks.count }.reduce(0.0) { $0 + ticks[$1] }
        return busy / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    private static func ownSeconds() -> Double {
        func seconds(_ who: __rusage_who_t) -> Double {
            var usage = rusage()
            getrusage(who, &usage)
            return Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6
                + Double(usage.ru_stime.tv_sec) + Double(usage.ru_stime.tv_usec) / 1e6
        }
        return seconds(__rusage_who_t(RUSAGE_SELF.rawValue)) + seconds(__rusage_who_t(RUSAGE_CHILDREN.rawValue))
    }
}
