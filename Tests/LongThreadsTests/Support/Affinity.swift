import Glibc

/// Where the scheduler may run a thread (`sched_setaffinity`), for tests that need two threads on
/// one CPU, or on two.
enum Affinity {
    /// `sched_getaffinity` and `sched_setaffinity` (Glibc's module hides them behind _GNU_SOURCE).
    private typealias AffinityCall = @convention(c) (pid_t, Int, UnsafeMutableRawPointer) -> Int32
    private static func call(_ name: String) -> AffinityCall? {
        // nil: RTLD_DEFAULT.
        guard let symbol = dlsym(nil, name) else { return nil }
        return unsafeBitCast(symbol, to: AffinityCall.self)
    }
    private static var getAffinity: AffinityCall? { call("sched_getaffinity") }
    private static var setAffinity: AffinityCall? { call("sched_setaffinity") }

    /// The CPUs the calling thread may run on, in order.
    static func allowedCPUs() -> [Int32] {
        var set = cpu_set_t()
        guard let getAffinity, getAffinity(0, MemoryLayout<cpu_set_t>.size, &set) == 0 else { return [] }
        return withUnsafeBytes(of: &set) { bytes in
            (0..<Int32(bytes.count * 8)).filter { bytes[Int($0 / 8)] & (1 << UInt8($0 % 8)) != 0 }
        }
    }

    /// Lets thread `tid` (0: the calling thread) run on `cpus` only; returns whether the kernel agreed.
    @discardableResult
    static func pin(_ tid: Int32, to cpus: [Int32]) -> Bool {
        var set = cpu_set_t()
        withUnsafeMutableBytes(of: &set) { bytes in
            for cpu in cpus where Int(cpu / 8) < bytes.count { bytes[Int(cpu / 8)] |= 1 << UInt8(cpu % 8) }
        }
        guard let setAffinity else { return false }
        return setAffinity(tid, MemoryLayout<cpu_set_t>.size, &set) == 0
    }
}
