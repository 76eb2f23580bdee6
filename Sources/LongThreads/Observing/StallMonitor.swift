import CLongThreadsShims
import Glibc
import Synchronization

/// Reports when one callout on a LongThread — a task, a timer or a descriptor handler — runs
/// longer than a threshold: the lag monitor of the seeds, which watches run-loop activity to catch
/// a stuck thread.
///
/// One monitor serves many threads, with one thread of its own (``threadName``). A watched thread
/// times each callout: each item of a drain is a callout of its own, so a report names the one
/// item that ran past the threshold, never a batch of short ones, and every slow item of a drain
/// is reported, each once. A watched thread starting a callout wakes an idle monitor once (and so
/// does the next item's start after a reported one); the monitor then sleeps until the earliest moment a running
/// callout would cross the threshold. While every watched thread is idle the monitor sleeps with no
/// timeout and costs no CPU (after at most one more wake-up, at the last callout's due time). A
/// stall is reported once per callout, while it still runs, within the threshold plus the
/// monitor's wake-up latency (well under twice the threshold), to the stalled thread's instrument
/// and then to `handler` on the monitor's thread. A callout already running when ``watch(_:)`` is
/// called counts from the call.
///
/// A task that runs the loop nested (``LongThread/runNested(in:until:while:)``) pauses while the
/// loop turns (the thread serves its other work meanwhile, so it is not stalled), and resumes as a
/// new callout, under its label, when the nested run returns.
///
/// With a ``deliveryThreshold`` the monitor also reports slow delivery: an item that started
/// longer than that after its post (the thread was busy with earlier work). It is reported once
/// per backlog: after a report, the next comes only once an item has started on time again.
///
/// ## The stalled thread's stack
/// A slow-dispatch report carries the stalled thread's own stack (``Report/stack``), taken while
/// the callout still runs, and says how it was taken (``Report/stackSource``). Before it looks, the
/// monitor reads what the thread does from `/proc/self/task/<tid>/syscall`, which alone decides
/// between two ways, each of which leaves what the thread waits in undisturbed:
/// - **With a signal** (``Report/StackSource/signal``), when the thread is running (the file says
///   `running`, or cannot be read), or asleep in a call the kernel restarts unseen after a handler
///   installed with `SA_RESTART`, having transferred nothing (see `signal(7)`): a futex wait
///   (`pthread_mutex_lock`, `pthread_cond_wait`, `NSLock`, `NSCondition`, `Mutex`, semaphores),
///   `read`, `readv`, `recv`/`recvfrom`/`recvmsg` without `MSG_WAITALL`, `accept`, `accept4`,
///   `wait4`, `waitid`, `flock`, `fcntl(F_SETLKW)`; not on a socket with a receive timeout
///   (`SO_RCVTIMEO`, when the kernel returns `EINTR` instead), nor in disk sleep (`D`: the thread
///   would answer only once its I/O is done, so it is walked). The monitor sends that thread alone
///   a real-time signal (`SIGRTMIN + 6`) with `tgkill`, only after checking, under a protocol the
///   loop thread takes part in, that the same callout still runs; if the callout ends meanwhile,
///   the loop waits at its next callout boundary until the capture is over, so the signal lands in
///   the library's own code. The handler is installed once, with `SA_RESTART`, and only when
///   nothing else handles the signal; it does only async-signal-safe work (it unwinds with
///   `backtrace(3)`, which follows the unwind tables, into memory prepared beforehand, and ignores
///   the signal unless a capture of that very thread is under way). Every LongThread unblocks that
///   signal in its own thread when it starts (threads inherit their creator's mask); no other
///   thread is ever sent it, and a stray instance (say from `kill(1)`) is ignored by the handler.
/// - **From the kernel's wait record** (``Report/StackSource/kernelWaitRecord``), for every other
///   wait: a `write` (which may have moved bytes: a handler would make it return a short count),
///   `poll`, `select`, `epoll_wait`, `nanosleep`, `clock_nanosleep`, any other call, or a page
///   fault. The thread is not signalled. The record gives the user stack pointer and the
///   instruction after the call; the monitor reads the sleeping thread's stack from there through
///   `process_vm_readv` (an unmapped page is an error, not a fault): it scans up from the stack
///   pointer for return addresses (words pointing into code just after a call instruction) through
///   the C library's short wrapper frames to the caller's, then follows frame pointers, as Swift,
///   this library and C built with `-fno-omit-frame-pointer` keep them. The stack is kept only if
///   the record reads the same afterwards (the thread slept in that call all along) and the same
///   callout still runs. ``Report/kernelWait`` says what the thread waits in: the system call, the
///   scheduler state, the kernel's wait channel. This walk is a heuristic: it ends at the first
///   caller built without frame pointers, and a stale frame record in a caller's own locals can
///   show that caller's caller at an earlier call site.
///
/// The monitor's thread then names the frames: from the images' symbol tables with the toolchain's
/// symbolicator (`Runtime`), and, for a frame it leaves unnamed, from the image's own `.symtab`,
/// else its `.dynsym` (a stripped library's exported functions), Swift names demangled; a frame
/// that neither names prints its address and its offset in the image (``Frame/description``).
/// Source files and lines are not read (DWARF took seconds per report in a large binary). It marks
/// the library's own frames and trims the run loop's below the work.
///
/// ## What a report contains
/// - **Running, or in a wait restarted unseen**: ``Report/stack`` taken with the signal;
///   ``Report/kernelWait`` is nil.
/// - **Asleep in any other wait**: ``Report/stack`` walked from the kernel's wait record, and
///   ``Report/kernelWait``. If no frame could be walked, or the thread woke twice while it was
///   walked, ``Report/stack`` is empty and ``Report/stackNote`` says why.
/// - **Neither** (capture off, the callout ended meanwhile, the signal taken by someone else, the
///   thread blocking it): no stack; ``Report/stackNote`` says which.
///
/// What the stalled work can observe: nothing while it sleeps in the kernel (a wait restarted
/// unseen is restarted, any other is not interrupted). A running thread is interrupted once per
/// report. Only if it enters a blocking system call in the microseconds between the `syscall` read
/// and the signal is that call interrupted: it is then restarted where the kernel allows (`read`,
/// `write`, `recv`, `send`, `accept`, `connect`, `open`, `wait`, `flock`, `pthread_mutex_lock`,
/// futex waits, ...), except that a `read` or `write` that moved some bytes already returns that
/// short count; calls the kernel never restarts after a handler (see `signal(7)`) return `EINTR`:
/// `poll`, `ppoll`, `select`, `epoll_wait`, `nanosleep`, `clock_nanosleep`, `usleep`, `sleep`
/// (which returns the time left), `sigtimedwait`, `io_getevents`, and socket reads and writes with
/// a timeout set (`SO_RCVTIMEO`, `SO_SNDTIMEO`). Code that loops on short counts and `EINTR`, as
/// such calls need anyway, loses nothing. Pass `capturesStacks: false` to turn capture off: no
/// signal is ever sent, `/proc` is not read, and reports carry neither a stack nor a kernel wait.
///
/// ## Cost
/// Nothing while no callout stalls: an unwatched thread pays one load and one branch per item; a
/// watched thread reads the clock when an item is posted and when it starts, and takes one
/// uncontended lock for a labelled item; the monitor sleeps. Each slow-dispatch report first reads
/// the thread's state from `/proc` (three small files, about 0.1 ms), which costs the stalled
/// thread nothing. A signal capture costs the stalled thread one signal and an unwind (the
/// monitor's round trip measured 8–50 µs); a walk from the wait record costs it nothing, and the
/// monitor about 1–3 ms (mostly reading `/proc/self/maps`; debug build, busy 2-core machine). The
/// monitor then names the frames, cached by address (about 0.1–0.2 ms for a cached stack); an
/// image's `.symtab`/`.dynsym` is read once, when a frame in it is first left unnamed.
public final class StallMonitor: Sendable {
    /// The kernel name of the monitor's thread.
    public static let threadName = "stall.monitor"

    /// The longest a callout may run before it is reported (slow dispatch).
    public let threshold: Duration
    /// The longest an item may wait between its post and its start before it is reported (slow
    /// delivery); nil: not reported.
    public let deliveryThreshold: Duration?
    /// Whether slow-dispatch reports carry the stalled thread's stack.
    public let capturesStacks: Bool
    private let state: StallMonitorState
    private let thread: pthread_t

    /// Starts a monitor (and its thread) that reports callouts running longer than `threshold`
    /// and, with a `deliveryThreshold`, items that start longer than that after their post.
    ///
    /// - Parameters:
    ///   - threshold: The longest a callout may run (slow dispatch).
    ///   - deliveryThreshold: The longest an item may wait for its start (slow delivery); nil
    ///     (the default) reports no slow delivery.
    ///   - capturesStacks: Whether to take a stalled thread's stack, with a signal or from the
    ///     kernel's wait record (see "The stalled thread's stack" above). Defaults to true.
    ///   - handler: Called on the monitor's thread, once per report. Keep it short: while it
    ///     runs, other reports wait.
    /// - Throws: ``LongThreadError/cannotStart(errno:)`` if its thread cannot be created.
    /// - Precondition: `threshold` and `deliveryThreshold` are positive.
    public init(
        threshold: Duration,
        deliveryThreshold: Duration? = nil,
        capturesStacks: Bool = true,
        handler: @escaping @Sendable (Report) -> Void
    ) throws(LongThreadError) {
        precondition(threshold > .zero, "StallMonitor needs a positive threshold, got \(threshold)")
        precondition(deliveryThreshold.map { $0 > .zero } ?? true, "StallMonitor needs a positive delivery threshold")
        self.threshold = threshold
        self.deliveryThreshold = deliveryThreshold
        self.capturesStacks = capturesStacks
        let state = StallMonitorState(
            threshold: UInt64(threshold.clampedNanoseconds),
            deliveryThreshold: deliveryThreshold.map { UInt64(max($0.clampedNanoseconds, 1)) } ?? 0,
            capturesStacks: capturesStacks,
            handler: handler
        )
        self.state = state
        thread = try PosixThread.spawn(options: .init()) { state.run() }
    }

    /// Stops watching every thread, stops the monitor and joins its thread.
    deinit {
        for core in state.watchedCores() { state.detach(from: core) }
        state.stop()
        if pthread_equal(thread, pthread_self()) != 0 {
            pthread_detach(thread) // the handler dropped the last reference, on the monitor's thread
        } else {
            pthread_join(thread, nil)
        }
    }

    /// Watches `thread` until it stops, ``unwatch(_:)`` or the monitor goes. Idempotent.
    /// - Callable from: any thread.
    public func watch(_ thread: LongThread) {
        state.attach(to: thread.core)
    }

    /// Stops watching `thread`.
    /// - Callable from: any thread.
    public func unwatch(_ thread: LongThread) {
        state.detach(from: thread.core)
    }
}

/// What a monitor's thread and the watched threads share.
final class StallMonitorState: Sendable {
    /// One watched thread.
    private final class Watch: @unchecked Sendable {
        weak var core: ThreadCore?
        /// When the watch began: a callout the loop did not time (it began before) counts from here.
        let since: UInt64
        /// Monitor thread only: the callout start last reported, so each callout is reported once.
        var reportedStart: UInt64 = 0
        init(core: ThreadCore) {
            self.core = core
            since = CLongThreadsShims_monotonicNanoseconds()
        }
    }

    private let threshold: UInt64
    /// Nanoseconds; 0: slow delivery is not reported.
    let deliveryThreshold: UInt64
    private let capturesStacks: Bool
    private let handler: @Sendable (StallMonitor.Report) -> Void
    private let watches = Locked<[Watch]>([])
    /// Slow deliveries the watched threads found, for the monitor's thread to hand on.
    private let lateDeliveries = Locked<[(ThreadCore, StallMonitor.Report)]>([])
    private let bell = Doorbell()
    /// True while the monitor sleeps with no timeout: the next thread to start a callout rings.
    private let idle = Atomic<Bool>(false)
    private let running = Atomic<Bool>(true)

    init(threshold: UInt64, deliveryThreshold: UInt64, capturesStacks: Bool, handler: @escaping @Sendable (StallMonitor.Report) -> Void) {
        self.threshold = threshold
        self.deliveryThreshold = deliveryThreshold
        self.capturesStacks = capturesStacks
        self.handler = handler
    }

    func attach(to core: ThreadCore) {
        let added = watches.withLock { watches -> Bool in
            guard !watches.contains(where: { $0.core === core }) else { return false }
            watches.append(Watch(core: core))
            return true
        }
        guard added else { return }
        core.watch.monitors.withLock { monitors in
            monitors.append(self)
            core.noteMonitorsChanged(monitors)
        }
        // A callout may be running already: look now.
        bell.ring()
    }

    func detach(from core: ThreadCore) {
        watches.withLock { $0.removeAll { $0.core === core || $0.core == nil } }
        core.watch.monitors.withLock { monitors in
            // The last reference to this state may go here, inside the lock the loop thread
            // reads the list under (so the sanitizer sees the order).
            monitors.removeAll { $0 === self }
            core.noteMonitorsChanged(monitors)
        }
    }

    func watchedCores() -> [ThreadCore] {
        watches.withLock { $0.compactMap(\.core) }
    }

    /// A watched thread's loop thread, under its `monitors` lock: an item started `waited` after
    /// its post, past the smallest delivery threshold of its monitors.
    func deliveredLate(_ core: ThreadCore, label: String?, waited: UInt64, queueDepth: Int) {
        guard deliveryThreshold != 0, waited >= deliveryThreshold else { return }
        let report = StallMonitor.Report(
            kind: .slowDelivery, threadName: core.name, label: label, duration: .nanoseconds(waited),
            queueDepth: queueDepth, stack: [], stackNote: nil
        )
        lateDeliveries.withLock { $0.append((core, report)) }
        bell.ring()
    }

    /// A watched thread's loop thread, under its `monitors` lock, right after it recorded a
    /// callout's start.
    func threadBecameBusy() {
        if idle.load(ordering: .sequentiallyConsistent), idle.exchange(false, ordering: .sequentiallyConsistent) {
            bell.ring()
        }
    }

    func stop() {
        running.store(false, ordering: .sequentiallyConsistent)
        bell.ring()
    }

    /// The monitor's thread.
    func run() {
        PosixThread.setCurrentName(StallMonitor.threadName)
        while running.load(ordering: .sequentiallyConsistent) {
            let seen = bell.value
            handOnLateDeliveries()
            var next = scan()
            if next == nil {
                // Announce the idle sleep, then look once more: a callout that began before the
                // announcement is seen here, one after it rings (a sequentially consistent pair
                // with ThreadCore.beginCallout).
                idle.store(true, ordering: .sequentiallyConsistent)
                next = scan()
                if next != nil { idle.store(false, ordering: .sequentiallyConsistent) }
            }
            if let next {
                let now = CLongThreadsShims_monotonicNanoseconds()
                bell.wait(seen: seen, timeoutNanoseconds: next > now ? Int64(next - now) : 0)
            } else {
                bell.wait(seen: seen, timeoutNanoseconds: -1)
            }
        }
    }

    /// Reports stalled callouts; returns when the next running callout would cross the threshold.
    private func scan() -> UInt64? {
        let now = CLongThreadsShims_monotonicNanoseconds()
        var next: UInt64?
        let current = watches.withLock { watches in
            watches.removeAll { $0.core == nil }
            return watches
        }
        for watch in current {
            guard let core = watch.core else { continue }
            var start = core.watch.calloutStartedAt.load(ordering: .sequentiallyConsistent)
            if start != 0, start == watch.reportedStart {
                // Reported and still running: this monitor may now sleep past its end, so the
                // next item's start must wake it (else the drain's next slow item goes unreported).
                // The flag, then the start again: see `ThreadCore.publishItemStart`.
                core.watch.wakeMonitorsAtNextItem.store(true, ordering: .sequentiallyConsistent)
                start = core.watch.calloutStartedAt.load(ordering: .sequentiallyConsistent)
            }
            if start == 0 || start == watch.reportedStart { continue }
            // A timed start is exact; an untimed one is the start of a drain that began before the
            // watch (the loop times items from the next callout on), so it counts from the watch.
            let isTimed = start & ThreadCore.timedBit != 0
            let from = isTimed ? start & ~ThreadCore.timedBit : max(start, watch.since)
            let due = from + threshold
            if now >= due {
                watch.reportedStart = start
                report(core, start: start, runningFor: now > from ? now - from : 0)
            } else {
                next = min(next ?? due, due)
            }
        }
        return next
    }

    private func report(_ core: ThreadCore, start: UInt64, runningFor nanoseconds: UInt64) {
        // The label is the callout's only if it was published under this very start.
        let label = core.watch.runningLabel.withLock { $0.start == start ? $0.label : nil }
        var stack: [StallMonitor.Frame] = []
        var stackNote: String?
        var stackSource = StallMonitor.Report.StackSource.unavailable
        var kernelWait: StallMonitor.KernelWait?
        if !capturesStacks {
            stackNote = StackSampler.Failure.disabled.note
        } else if start & ThreadCore.timedBit == 0 {
            // Untimed: the loop does not stop at the next boundary for a capture.
            stackNote = "the callout began before the watch; its stack is not captured"
        } else {
            switch Self.whereabouts(of: core, start: start) {
            case .signalled(let frames):
                stack = frames
                stackSource = .signal
            case .walked(let frames, let wait):
                (stack, kernelWait) = (frames, wait)
                stackSource = frames.isEmpty ? .unavailable : .kernelWaitRecord
                if frames.isEmpty { stackNote = "asleep in the kernel; no frame could be walked from its wait record" }
            case .asleep(let wait, let why):
                kernelWait = wait
                stackNote = "asleep in the kernel; \(why)"
            case .failure(let failure): stackNote = failure.note
            }
        }
        var report = StallMonitor.Report(
            kind: .slowDispatch, threadName: core.name, label: label, duration: .nanoseconds(nanoseconds),
            queueDepth: core.pendingCount, stack: stack, stackNote: stackNote, kernelWait: kernelWait
        )
        report.stackSource = stackSource
        core.instrument?.record(.stall(report))
        handler(report)
    }

    /// Where the stalled thread is, and how its stack was taken.
    private enum Whereabouts {
        /// Taken with the signal: running, or asleep in a wait the kernel restarts unseen.
        case signalled([StallMonitor.Frame])
        /// Walked from the kernel's wait record, the thread asleep and not interrupted.
        case walked([StallMonitor.Frame], StallMonitor.KernelWait)
        /// Asleep, but its stack could not be walked: why.
        case asleep(StallMonitor.KernelWait, String)
        case failure(StackSampler.Failure)
    }

    /// A thread asleep in a system call that a handler would disturb (a `write` that has moved
    /// bytes returns a short count, `poll` and the sleeps return early) is not signalled: its
    /// stack is walked from the kernel's wait record (`WaitStackWalker`), and trusted only if the
    /// record is the same after the walk (it slept in the same call all along) and the same
    /// callout still runs. A running thread's stack is captured with the signal (so is one whose
    /// `syscall` file cannot be read), and so is that of a thread asleep in a call the kernel
    /// restarts unseen after the handler (`SA_RESTART`, nothing transferred: a lock, a condition,
    /// a `read`, an `accept`).
    private static func whereabouts(of core: ThreadCore, start: UInt64) -> Whereabouts {
        let tid = core.watch.kernelThreadID.load(ordering: .relaxed)
        // Twice at most: a thread that woke during the first walk is looked at afresh.
        for attempt in 0..<2 {
            // A thread in disk sleep (`D`) would answer the signal only once its I/O is done: walked too.
            guard tid != 0, let wait = KernelWaitReader.wait(ofThread: tid),
                  !wait.isRestartedUnseen || wait.state == .diskSleep else { break }
            guard let stackPointer = wait.userStackPointer, let instruction = wait.userInstruction else {
                return .asleep(wait, "the kernel's wait record gives no stack pointer")
            }
            let addresses = WaitStackWalker.walk(stackPointer: stackPointer, instruction: instruction)
            let slept = KernelWaitReader.systemCallRecord(ofThread: tid) == wait.record
            guard core.watch.calloutStartedAt.load(ordering: .sequentiallyConsistent) == start else { return .failure(.ended) }
            if slept { return .walked(StackSampler.symbolicate(addresses), wait) }
            if attempt == 1 { return .asleep(wait, "it woke twice while its stack was walked from its wait record") }
        }
        switch StackSampler.capture(core, start: start) {
        case .success(let frames): return .signalled(frames)
        case .failure(let failure): return .failure(failure)
        }
    }

    private func handOnLateDeliveries() {
        let late = lateDeliveries.withLock { late in
            defer { late.removeAll() }
            return late
        }
        for (core, report) in late {
            core.instrument?.record(.stall(report))
            handler(report)
        }
    }
}
