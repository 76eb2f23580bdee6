import CLongThreadsShims
import Glibc
import Synchronization

/// What one kind of wait on one thread learnt (`WaitPolicy`): how long its waits that won took,
/// and how often they won.
struct WaitHistory {
    /// `wins` is out of this.
    static let winScale: Int32 = 256
    /// Moving average of the waits that won, in ns.
    var average: Int64
    /// Moving average of the waits that won, out of `winScale`.
    var wins = WaitHistory.winScale
    /// Waits sat out since the last probe, while they keep losing.
    var sinceProbe: UInt32 = 0

    init(average: Int64) {
        self.average = average
    }

    /// A wait that won after `waited` ns, or lost. An eighth each: a few unusual waits move it little.
    mutating func record(won: Bool, waited: Int64) {
        wins += ((won ? Self.winScale : 0) - wins) / 8
        if won { average += (waited - average) / 8 }
    }

    /// Whether this wait sits out: while fewer than a quarter of recent waits won, all but every
    /// `probeInterval`-th do (that one probes for a change).
    mutating func sitsOut(probeInterval: UInt32) -> Bool {
        guard wins < Self.winScale / 4 else { return false }
        sinceProbe &+= 1
        return sinceProbe % probeInterval != 0
    }
}

/// Whether a CPU was spare for the calling thread when it last looked, when that was, and how many
/// decisions used it since (`WaitPolicy.spareCPUNow`).
struct LoadSample {
    /// `sampledAt` of a thread that never sampled.
    static let never: Int64 = .min / 2
    /// Monotonic ns.
    var sampledAt = LoadSample.never
    var spareCPU = false
    var decisions: UInt32 = 0
}

/// What the calling thread's waits learnt, for `WaitPolicy` to decide by: one per OS thread
/// (a caller's reply spins and joins, a loop thread's lingers and parks), kept in C thread-local
/// storage (`CLongThreadsShims_waitLearning`; Swift has no thread-local variables). Touched only by
/// its own thread, so it needs no lock.
struct WaitLearning {
    /// First: zeroed storage reads false, and `current` then makes a fresh one.
    private(set) var prepared = true
    /// Caller: spins for a reply from a loop thread its post found awake, and from one it woke.
    var replies = WaitHistory(average: WaitPolicy.initialSpinAverage)
    var wokenReplies = WaitHistory(average: WaitPolicy.initialSpinAverage)
    var lingers = WaitHistory(average: WaitPolicy.initialSpinAverage)
    var joins = WaitHistory(average: WaitPolicy.initialJoinAverage)
    var parks = WaitHistory(average: WaitPolicy.initialSpinAverage)
    /// Loop thread: moving average of how long its callers took to post again after a reply,
    /// in ns, as its lingers and parks saw it (each sample at most a park's length).
    var callerGap = WaitPolicy.initialSpinAverage
    var load = LoadSample()
    /// Loop thread: its key in its replies (`ThreadCore.replierKey`).
    var replierKey: UnsafeRawPointer?
    /// Loop thread: the CPU of the caller it last answered, or -1.
    var lastWaiterCPU: Int32 = -1
    /// Caller: the thread its last reply came from (its key), and that reply's CPU.
    var lastReplier: UnsafeRawPointer?
    var lastReplierCPU: Int32 = -1

    /// The calling thread's learning, made fresh at its first use. The pointer is valid for the
    /// thread's life, on that thread only.
    static var current: UnsafeMutablePointer<WaitLearning> {
        let storage = CLongThreadsShims_waitLearning()!
        if _slowPath(!storage.load(as: Bool.self)) {
            precondition(MemoryLayout<WaitLearning>.size <= Int(CLongThreadsShims_waitLearningBytes)
                && MemoryLayout<WaitLearning>.offset(of: \WaitLearning.prepared) == 0)
            storage.initializeMemory(as: WaitLearning.self, to: WaitLearning())
        }
        return storage.assumingMemoryBound(to: WaitLearning.self)
    }

    /// Forgets what the calling thread learnt (tests): its waits decide as a new thread's would.
    static func resetCurrent() {
        let key = current.pointee.replierKey
        current.pointee = WaitLearning()
        current.pointee.replierKey = key
    }

    /// Caller: the thread with key `replier` runs on `cpu` (-1: unknown), as its reply said (or,
    /// for a new thread, its start).
    mutating func noteReplier(_ replier: UnsafeRawPointer?, cpu: Int32) {
        (lastReplier, lastReplierCPU) = (replier, cpu)
    }

    /// Caller: the CPU last noted for `replier` (a reply, or a start), or -1.
    func notedCPU(of replier: UnsafeRawPointer?) -> Int32 {
        replier != nil && replier == lastReplier ? lastReplierCPU : -1
    }

    /// Caller: `replier` last ran on the calling thread's CPU.
    func replierSharesCPU(_ replier: UnsafeRawPointer?) -> Bool {
        replier != nil && replier == lastReplier && Self.onCPU(lastReplierCPU)
    }

    /// Loop thread: the caller it last answered ran on the calling thread's CPU.
    var waiterSharesCPU: Bool { Self.onCPU(lastWaiterCPU) }

    /// The calling thread runs on `cpu` (a hint: it may move right after).
    static func onCPU(_ cpu: Int32) -> Bool {
        cpu >= 0 && CLongThreadsShims_currentCPU() == cpu
    }
}

/// The system's runnable threads at one instant, from `/proc/loadavg`'s fourth field
/// ("0.10 0.20 0.30 2/345 6789"; not the load average, which lags), shared by every thread: a
/// thread's first wait (a new LongThread's first reply) then costs no /proc read, which took tens
/// of microseconds of its life. Threads that refresh it at once each read /proc: harmless.
enum RunnableThreads {
    private static let sampledAt = Atomic<Int64>(.min / 2)
    private static let count = Atomic<Int>(-1)

    /// The count, read again when the shared sample is older than `maximumAge` ns; -1 when unknown.
    static func sample(now: Int64, maximumAge: Int64) -> Int {
        if now - sampledAt.load(ordering: .acquiring) < maximumAge { return count.load(ordering: .relaxed) }
        let runnable = read()
        count.store(runnable, ordering: .relaxed)
        sampledAt.store(now, ordering: .releasing)
        return runnable
    }

    /// Opened and closed each time: a descriptor held for the process's life would show in every
    /// descriptor census. The three calls cost about 12 µs (`WaitPolicy.loadSampleDecisions`).
    /// Read into the stack and parsed by hand: a sample is taken at most every few ms, but a
    /// new thread's first wait may take one, so it stays within its life's cost.
    private static func read() -> Int {
        let fd = DescriptorHeadroom.openBriefly("/proc/loadavg")
        guard fd >= 0 else { return -1 }
        defer { close(fd) }
        return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 128) { text in
            let length = Glibc.read(fd, text.baseAddress, text.count)
            guard length > 0 else { return -1 }
            return runningField(UnsafeBufferPointer(rebasing: text[..<length]))
        }
    }

    /// The fourth field's "running" part: the digits after the third space, up to the slash.
    private static func runningField(_ text: UnsafeBufferPointer<UInt8>) -> Int {
        var spaces = 0
        var index = 0
        while index < text.count, spaces < 3 {
            if text[index] == UInt8(ascii: " ") { spaces += 1 }
            index += 1
        }
        var value = -1
        while index < text.count, text[index] >= UInt8(ascii: "0"), text[index] <= UInt8(ascii: "9") {
            value = max(value, 0) * 10 + Int(text[index] - UInt8(ascii: "0"))
            index += 1
        }
        return spaces == 3 ? value : -1
    }
}
