extension LongThread {
    /// What happens to work already accepted when a stop begins.
    public enum PendingWork: Sendable, Equatable {
        /// Run every accepted item, in order, then exit. Work that may run only in other modes is
        /// run in those modes before the loop exits.
        case drain
        /// Drop every item that has not started: each is released unrun, and each waiter gets
        /// ``LongThreadError/discarded``. The item running at that moment completes.
        case discard
    }

    /// The scheduling a thread gets at creation.
    public enum SchedulingPolicy: Sendable, Equatable {
        /// Whatever the creating thread has (on Linux: usually `SCHED_OTHER`, nice 0, like the
        /// main thread).
        case inherited
        /// `SCHED_OTHER` with this nice value (-20...19); lowering it needs privileges.
        case other(nice: Int32)
        /// `SCHED_BATCH`: for throughput work that should not preempt interactive threads.
        case batch
        /// `SCHED_IDLE`: runs only when nothing else wants the CPU.
        case idle
        /// `SCHED_FIFO` at `priority` (1...99). Needs `CAP_SYS_NICE` or an `RLIMIT_RTPRIO`;
        /// without, `init` throws `cannotStart(errno: EPERM)`.
        case fifo(priority: Int32)
        /// `SCHED_RR` at `priority` (1...99); same privileges as `.fifo`.
        case roundRobin(priority: Int32)
    }

    /// How a LongThread's pthread is created and observed.
    public struct Options: Sendable {
        /// The stack the thread's work needs, in bytes; nil takes the system default (`RLIMIT_STACK`,
        /// often 8 MiB, of which the library's and glibc's share is taken).
        ///
        /// The size is the work's: the thread's stack is this plus what glibc takes of it (its TLS
        /// and thread descriptor, `__pthread_get_minstack`: about 25 KiB in a Swift process) and
        /// what the library's own frames take under and beside the work (CF's run loop, the drain,
        /// a nested run, a stall report's signal handled on this stack: 40 KiB, more in a
        /// sanitizer's build), rounded up to a page. So Chromium's 24 KiB thread runs its 24 KiB of
        /// work, where a bare pthread size would leave it nothing.
        /// - 0: the work needs no more than a few frames: the thread's stack is the library's and
        ///   glibc's share alone.
        /// - Negative, or a size whose sum overflows: `init` throws `cannotStart(errno: EINVAL)`.
        /// - More than the kernel can map (beyond the address space, or `vm.overcommit_memory`'s
        ///   limit): `init` throws `cannotStart(errno: EAGAIN)`, pthread's answer. Never a crash.
        public var stackSize: Int?
        /// The scheduling policy and priority.
        public var schedulingPolicy: SchedulingPolicy
        /// The time slice the thread asks the kernel's scheduler for (Linux 6.12 and later, EEVDF:
        /// `sched_attr.sched_runtime`, 0.1 to 100 ms); nil keeps the kernel's default (a few ms).
        ///
        /// A short slice gives the thread an early deadline when work wakes it, so it preempts
        /// CPU-bound threads instead of waiting for their slice to end: with two busy threads on
        /// two CPUs, the 99.9th percentile of a round trip fell from ~3 ms to ~75 µs. Its share
        /// of the CPU stays the same; a long task it runs is preempted
        /// more often when others want the CPU. Set only for `SCHED_OTHER` threads
        /// (``LongThread/SchedulingPolicy/inherited`` from such a thread, or ``LongThread/SchedulingPolicy/other(nice:)``),
        /// on the thread itself, by its first callout (task, timer or descriptor handler) once the
        /// thread has lived 1 ms: a thread that ends sooner does not pay the two system calls
        /// (~4 µs with CPU hogs beside it), and gains nothing from a slice meant for wake-ups over
        /// a long life. Older kernels ignore it, and a refusal is ignored.
        public var schedulerSlice: Duration?
        /// Receives the thread's lifecycle, drain and stall events (logs, metrics); nil costs nothing.
        public var instrument: (any LongThreadInstrument)?
        /// A bound on the work waiting for the thread; nil (the default) leaves the queue unbounded.
        /// See ``QueueLimit``.
        public var queueLimit: QueueLimit?
        /// Runs on the thread before any work, while `init` waits: open what the thread owns (a
        /// handle of a C library that is not thread-safe, say). If it throws, the thread ends
        /// without running any work (``tearDown`` is not called) and `init` throws
        /// ``LongThreadError/setUpFailed(_:)``.
        ///
        /// The thread lets go of it once it ran (and of ``tearDown`` when the thread ends), and of
        /// the error it threw once `init` threw it: what they hold (a box with the thread's
        /// handle, or with a ``ThreadBound`` of the thread) does not keep the thread alive.
        public var setUp: (@Sendable () throws -> Void)?
        /// Runs on the thread after its last item and before its run loop is torn down, however
        /// the thread ends: a stop (draining or discarding), the last handle dropped, the owner's
        /// death, a `LongThreadService` shutting down. Close here what ``setUp`` opened. The thread
        /// accepts no work by then: a post from here throws ``LongThreadError/stopped``.
        public var tearDown: (@Sendable () -> Void)?
        /// LongThreadsTestKit's hold on the thread: its virtual clock, its gate, its faults.
        @_spi(TestKit) public var harness: TestHarness?

        /// Options with the system's defaults, or the given settings.
        public init(
            stackSize: Int? = nil,
            schedulingPolicy: SchedulingPolicy = .inherited,
            schedulerSlice: Duration? = .microseconds(100),
            instrument: (any LongThreadInstrument)? = nil,
            queueLimit: QueueLimit? = nil,
            setUp: (@Sendable () throws -> Void)? = nil,
            tearDown: (@Sendable () -> Void)? = nil
        ) {
            self.stackSize = stackSize
            self.schedulingPolicy = schedulingPolicy
            self.schedulerSlice = schedulerSlice
            self.instrument = instrument
            self.queueLimit = queueLimit
            self.setUp = setUp
            self.tearDown = tearDown
        }
    }
}
