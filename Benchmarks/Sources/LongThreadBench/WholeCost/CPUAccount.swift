import Glibc

/// The CPU time of every thread of this process except the hogs: the caller, the contender's
/// worker, and any pool thread it uses (libdispatch's, NIO's), including threads that ended
/// meanwhile (CLOCK_PROCESS_CPUTIME_ID keeps their time). A contender's whole cost is a
/// difference of two readings taken while it runs alone, less the process's idle rate over the
/// same wall time. The neighbour process is another process: its time is not counted.
struct CPUReading {
    /// Process CPU minus the hogs' CPU, in nanoseconds.
    var cpu: Double
    /// Monotonic wall clock, in nanoseconds.
    var wall: Double

    static func now() -> CPUReading {
        var time = timespec()
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &time)
        let process = Double(time.tv_sec) * 1e9 + Double(time.tv_nsec)
        let hogs = Hogs.threadIDs.reduce(0.0) { $0 + (ProcFS.usage(ofThread: $1)?.cpuNanoseconds ?? 0) }
        return CPUReading(cpu: process - hogs, wall: Double(nowNanoseconds()))
    }

    /// CPU spent since `start`, in nanoseconds, less what the process spends idle over as long.
    func spent(since start: CPUReading, idleRate: Double = CPUReading.idleRate) -> Double {
        max(0, cpu - start.cpu - idleRate * (wall - start.wall))
    }

    /// CPU nanoseconds per wall nanosecond of this process at rest (no contender, hogs
    /// excluded): leftover pool threads, the kernel's accounting of a sleeping main thread.
    /// Measured once, on first use, over 200 ms.
    static let idleRate: Double = {
        let start = CPUReading.now()
        usleep(200_000)
        let end = CPUReading.now()
        return max(0, (end.cpu - start.cpu) / (end.wall - start.wall))
    }()
}
