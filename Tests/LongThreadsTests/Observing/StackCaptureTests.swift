import CLongThreadsShims
import CStallFixtures
import Foundation
import LongThreads
import Synchronization
import Testing

// Functions the stalled tasks are stuck in: the reports' stacks must name them. Not inlined,
// and visible to the dynamic linker (not private), so that the stack can name them.

/// Spins, calling nothing, until `latch` opens: the sample lands in this function's own code. A
/// sample inside a callee's prologue (it spun on `latch.isOpen`, and was caught at
/// `NSCondition.lock() + 9` on a loaded machine) loses the caller's frame to frame-pointer
/// unwinding, and the report then could not name this function.
@inline(never)
func stallSpinning(until latch: Latch) {
    final class Flag: Sendable { let isSet = Atomic<Bool>(false) }
    let opened = Flag()
    Thread { latch.wait(); opened.isSet.store(true, ordering: .releasing) }.start()
    while !opened.isSet.load(ordering: .acquiring) {}
}

/// Returns poll(2)'s result and how many times it returned EINTR (each retried, as a poll loop
/// must): a wait walked from the kernel's record is never interrupted, so 0.
@inline(never)
func stallInPoll(_ fd: Int32, milliseconds: Int32 = -1) -> (result: Int32, interruptions: Int) {
    var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
    var interruptions = 0
    while true {
        let rc = poll(&entry, 1, milliseconds)
        if rc >= 0 || errno != EINTR { return (rc, interruptions) }
        interruptions += 1
    }
}

/// Sleeps `milliseconds` in one nanosleep(2), which a handler would end early (EINTR, the time
/// left in `remaining`); returns its result, errno, and how long it slept.
@inline(never)
func stallInNanosleep(milliseconds: Int) -> (result: Int32, error: Int32, slept: Duration) {
    var request = timespec(tv_sec: milliseconds / 1000, tv_nsec: (milliseconds % 1000) * 1_000_000)
    var remaining = timespec()
    let clock = ContinuousClock()
    let start = clock.now
    let rc = nanosleep(&request, &remaining)
    return (rc, rc < 0 ? errno : 0, clock.now - start)
}

/// Waits in select(2) reached through two C frames of a C library of our own.
@inline(never)
func stallInFixtureSelect(_ fd: Int32) -> CStallFixtures_SelectResult {
    fixture_outer(fd)
}

@inline(never)
func stallInMutexLock(_ mutex: UnsafeMutablePointer<pthread_mutex_t>) {
    pthread_mutex_lock(mutex)
    pthread_mutex_unlock(mutex)
}

/// Writes all of `bytes` to `fd` as careful code does (looping on short counts and EINTR); returns
/// what each write(2) call returned.
@inline(never)
func stallInWrite(_ fd: Int32, _ bytes: [UInt8]) -> [Int] {
    var counts: [Int] = []
    var offset = 0
    while offset < bytes.count {
        let rc = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + offset, bytes.count - offset) }
        counts.append(rc)
        if rc > 0 { offset += rc } else if errno != EINTR { break }
    }
    return counts
}

/// Returns read(2)'s result, errno and the byte read: SA_RESTART restarts the read, so no EINTR.
@inline(never)
func stallInRead(_ fd: Int32) -> (Int, Int32, UInt8) {
    var byte: UInt8 = 0
    let rc = read(fd, &byte, 1)
    return (rc, rc < 0 ? errno : 0, byte)
}

extension StallMonitoring {
    @Suite("Stall reports carry the stalled thread's stack", .serialized)
    struct StackCaptureTests {
        /// Runs `stuck` as a labelled task on a watched thread until the first report arrives, then
        /// `release`; returns the report and what the task returned.
        private func report<T: Sendable>(
            _ name: String,
            capturesStacks: Bool = true,
            release: @escaping @Sendable () -> Void = {},
            _ stuck: @escaping @Sendable (Latch) -> T
        ) throws -> (StallMonitor.Report, T?) {
            let reports = Recorder<StallMonitor.Report>()
            let reported = Latch()
            let monitor = try StallMonitor(threshold: .milliseconds(50), capturesStacks: capturesStacks) { report in
                reports.record(report)
                reported.countDown()
                release()
            }
            let thread = try LongThread(name: name)
            defer { thread.stop() }
            monitor.watch(thread)
            let result = Recorder<T>()
            try thread.perform(label: name) { result.record(stuck(reported)) }
            #expect(reported.wait())
            try thread.sync {}
            let first = try #require(reports.events.first)
            return (first, result.events.first)
        }

        private func names(_ report: StallMonitor.Report) -> [String] {
            report.stack.map { $0.symbol ?? "?" }
        }

        /// Whether `report`'s stack names `functions` in this order, innermost first (others may
        /// lie between them).
        private func names(_ report: StallMonitor.Report, inOrder functions: [String]) -> Bool {
            var rest = names(report)[...]
            for function in functions {
                guard let found = rest.firstIndex(where: { $0.contains(function) }) else { return false }
                rest = rest[(found + 1)...]
            }
            return true
        }

        @Test("a spinning task: the signal takes the stack, which names the function, first frames the task's")
        func spinning() throws {
            let (report, _) = try report("lt-spin") { stallSpinning(until: $0) }
            #expect(report.kind == .slowDispatch)
            #expect(names(report).contains { $0.contains("stallSpinning") }, "\(report)")
            // The run loop under the task is trimmed; the capture's own frames are not there.
            #expect(!names(report).contains { $0.contains("engineServiceWork") || $0.contains("CFRunLoopRun") }, "\(report)")
            #expect(!names(report).contains { $0.contains("handler") && $0.contains("stack") }, "\(report)")
            #expect(report.stackSource == .signal, "\(report)")
            #expect(report.kernelWait == nil, "\(report)")
            #expect(report.description.contains("(stack taken with a signal)"), "\(report)")
        }

        /// The call a report's kernel wait names, and the function that made it.
        private func waitsIn(_ report: StallMonitor.Report) -> (call: String?, caller: String?) {
            (report.kernelWait?.systemCallName, report.kernelWait?.caller?.symbol)
        }

        /// A report whose stack was walked from the kernel's wait record, the thread not interrupted.
        private func expectWalked(_ report: StallMonitor.Report, sourceLocation: SourceLocation = #_sourceLocation) {
            #expect(report.stackSource == .kernelWaitRecord, "\(report)", sourceLocation: sourceLocation)
            #expect(report.stackNote == nil, "\(report)", sourceLocation: sourceLocation)
            #expect(report.kernelWait?.state == .sleeping, "\(report)", sourceLocation: sourceLocation)
            #expect(report.description.contains("(stack read from the kernel's wait record, not interrupted)"),
                    "\(report)", sourceLocation: sourceLocation)
            // The run loop under the task is trimmed, as for a signalled stack.
            #expect(!names(report).contains { $0.contains("CFRunLoopRun") }, "\(report)", sourceLocation: sourceLocation)
        }

        @Test("a task in poll is not signalled: its stack is walked from the wait record; poll returns the data, never EINTR")
        func inPoll() throws {
            var fds: [Int32] = [0, 0]
            #expect(pipe(&fds) == 0)
            defer { close(fds[0]); close(fds[1]) }
            let (readEnd, writeEnd) = (fds[0], fds[1])
            let (report, result) = try report("lt-poll", release: { _ = write(writeEnd, "x", 1) }) { _ in stallInPoll(readEnd) }
            expectWalked(report)
            #expect(names(report, inOrder: ["poll", "stallInPoll"]), "\(report)")
            #expect(["poll", "ppoll"].contains(waitsIn(report).call), "\(report)")
            // The wrapper that made the call: `poll`, or `__syscall_cancel_arch` with a newer glibc.
            #expect(waitsIn(report).caller != nil, "\(report)")
            #expect(result?.result == 1)
            #expect(result?.interruptions == 0)
        }

        @Test("a task in pthread_mutex_lock: the signal takes the stack, which names it and the caller")
        func inMutexLock() throws {
            let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
            mutex.initialize(to: pthread_mutex_t())
            pthread_mutex_init(mutex, nil)
            defer { pthread_mutex_destroy(mutex); mutex.deallocate() }
            pthread_mutex_lock(mutex)
            let box = UnsafeSendable(mutex)
            let (report, _) = try report("lt-mutex", release: { pthread_mutex_unlock(box.value) }) { _ in stallInMutexLock(box.value) }
            #expect(names(report).contains { $0.contains("pthread_mutex_lock") || $0.contains("lll_lock_wait") }, "\(report)")
            #expect(names(report).contains { $0.contains("stallInMutexLock") }, "\(report)")
            #expect(report.stackSource == .signal, "\(report)")
        }

        @Test("a task in read on a pipe takes the signal (the kernel restarts the read unseen): its stack names read; the read returns the byte")
        func inRead() throws {
            var fds: [Int32] = [0, 0]
            #expect(pipe(&fds) == 0)
            defer { close(fds[0]); close(fds[1]) }
            let (readEnd, writeEnd) = (fds[0], fds[1])
            let (report, result) = try report("lt-read", release: { _ = write(writeEnd, "x", 1) }) { _ in stallInRead(readEnd) }
            #expect(report.stackSource == .signal, "\(report)")
            #expect(names(report, inOrder: ["read", "stallInRead"]), "\(report)")
            #expect(report.kernelWait == nil, "\(report)")
            #expect(result?.0 == 1)
            #expect(result?.1 == 0, "no EINTR")
            #expect(result?.2 == UInt8(ascii: "x"))
        }

        /// (bytes already in the pipe, bytes written): the pipe holds 65,536 bytes, so each write
        /// moves part of its bytes, then sleeps.
        @Test("a task blocked in a write that has moved bytes is not signalled: its stack is walked; the write completes whole",
              arguments: [(0, 262_144), (61_440, 8_192)])
        func inBlockingWrite(prefill: Int, size: Int) throws {
            var fds: [Int32] = [0, 0]
            #expect(pipe(&fds) == 0)
            defer { close(fds[0]); close(fds[1]) }
            let (readEnd, writeEnd) = (fds[0], fds[1])
            let prefix = (0..<prefill).map { UInt8(truncatingIfNeeded: $0 % 13) }
            if prefill > 0 { #expect(stallInWrite(writeEnd, prefix) == [prefill]) }
            let bytes = (0..<size).map { UInt8(truncatingIfNeeded: $0 % 251) }
            let reports = Recorder<StallMonitor.Report>()
            let inPipe = Recorder<Int32>()
            let reported = Latch()
            let monitor = try StallMonitor(threshold: .milliseconds(50)) { report in
                var queued: Int32 = 0
                _ = ioctl(readEnd, UInt(FIONREAD), &queued)
                inPipe.record(queued)
                reports.record(report)
                reported.countDown()
            }
            let thread = try LongThread(name: "lt-write")
            defer { thread.stop() }
            monitor.watch(thread)
            let counts = Recorder<[Int]>()
            let wrote = Latch()
            try thread.perform(label: "lt-write") {
                counts.record(stallInWrite(writeEnd, bytes))
                wrote.countDown()
            }
            #expect(reported.wait())
            // The write had moved some of its bytes when it was reported.
            #expect((inPipe.events.first ?? 0) > Int32(prefill), "\(inPipe.events)")
            // Read everything back: no byte lost, none twice, in order.
            var received: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 65_536)
            while received.count < prefill + size {
                let rc = buffer.withUnsafeMutableBytes { read(readEnd, $0.baseAddress!, $0.count) }
                if rc <= 0 { break }
                received += buffer[..<rc]
            }
            #expect(wrote.wait())
            #expect(received == prefix + bytes)
            #expect(counts.events.first == [size], "one write(2), not disturbed: \(counts.events)")
            let report = try #require(reports.events.first)
            expectWalked(report)
            #expect(names(report, inOrder: ["write", "stallInWrite"]), "\(report)")
            #expect(report.kernelWait?.systemCallName == "write", "\(report)")
        }

        @Test("a task in nanosleep is not signalled: its stack is walked; it sleeps its whole time")
        func inNanosleep() throws {
            let (report, result) = try report("lt-sleep") { _ in stallInNanosleep(milliseconds: 300) }
            expectWalked(report)
            #expect(names(report, inOrder: ["nanosleep", "stallInNanosleep"]), "\(report)")
            #expect(["nanosleep", "clock_nanosleep"].contains(waitsIn(report).call), "\(report)")
            #expect(result?.result == 0, "no EINTR: \(String(describing: result))")
            #expect((result?.slept ?? .zero) >= .milliseconds(300))
        }

        @Test("a task in a C library's select, two C frames down: its stack names the C frames and the Swift caller; select returns the readable descriptor")
        func inSelectThroughC() throws {
            var fds: [Int32] = [0, 0]
            #expect(pipe(&fds) == 0)
            defer { close(fds[0]); close(fds[1]) }
            let (readEnd, writeEnd) = (fds[0], fds[1])
            let (report, result) = try report("lt-select", release: { _ = write(writeEnd, "x", 1) }) { _ in
                stallInFixtureSelect(readEnd)
            }
            expectWalked(report)
            #expect(names(report, inOrder: ["fixture_middle", "fixture_outer", "stallInFixtureSelect"]), "\(report)")
            #expect(["select", "pselect6"].contains(waitsIn(report).call), "\(report)")
            #expect(result?.result == 1, "no EINTR: \(String(describing: result))")
            #expect(result?.error == 0)
            #expect(result?.isReadable == 1)
        }

        @Test("a thread started by a thread that blocks the capture signal still has its stack taken")
        func creatorBlocksTheSignal() throws {
            // A daemon that blocks every signal before it starts threads (to sigwait in one):
            // the LongThread inherits the mask, and unblocks the capture signal for itself.
            let made = Recorder<LongThread>()
            let started = Latch()
            Thread {
                var set = sigset_t()
                sigemptyset(&set)
                sigaddset(&set, CLongThreadsShims_stackCaptureSignal())
                pthread_sigmask(SIG_BLOCK, &set, nil)
                if let thread = try? LongThread(name: "lt-masked") { made.record(thread) }
                started.countDown()
            }.start()
            #expect(started.wait())
            let thread = try #require(made.events.first)
            defer { thread.stop() }
            // Unwatched, it leaves its mask alone: the unblock (and `gettid`) wait for the first
            // timed callout, so a thread no monitor watches pays neither system call.
            func captureSignalBlocked() throws -> Bool {
                try thread.sync {
                    var mask = sigset_t()
                    pthread_sigmask(SIG_BLOCK, nil, &mask)
                    return sigismember(&mask, CLongThreadsShims_stackCaptureSignal()) == 1
                }
            }
            #expect(try captureSignalBlocked())
            let reports = Recorder<StallMonitor.Report>()
            let reported = Latch()
            let monitor = try StallMonitor(threshold: .milliseconds(50)) { report in
                reports.record(report)
                reported.countDown()
            }
            monitor.watch(thread)
            try thread.perform(label: "lt-masked") { stallSpinning(until: reported) }
            #expect(reported.wait())
            try thread.sync {}
            let report = try #require(reports.events.first)
            #expect(names(report).contains { $0.contains("stallSpinning") }, "\(report)")
            #expect(try !captureSignalBlocked())
        }

        @Test("with capture off, no signal: the report says so and has no stack")
        func captureOff() throws {
            let (report, _) = try report("lt-nostack", capturesStacks: false) { stallSpinning(until: $0) }
            #expect(report.stack.isEmpty)
            #expect(report.stackNote == "stack capture is off")
        }

        @Test("a stray instance of the signal is ignored")
        func straySignal() throws {
            let thread = try LongThread(name: "lt-stray")
            defer { thread.stop() }
            let (_, _) = try report("lt-arm") { stallSpinning(until: $0) } // installs the handler
            let tid = try thread.kernelThreadID()
            // As from kill(1) aimed at the thread: no capture is under way for it.
            #expect(CLongThreadsShims_stackCaptureSignalThread(tid) == 0)
            #expect(try thread.sync { 42 } == 42)
        }

        @Test("hundreds of reports, many racing the callout's end, stay clean", .timeLimit(.minutes(1)))
        func manyReports() throws {
            let reports = Counter()
            let all = Counter()
            let enough = 300
            let done = Latch()
            let captured = Counter()
            let monitor = try StallMonitor(threshold: .microseconds(200)) { report in
                all.increment()
                if !report.stack.isEmpty { captured.increment() }
                if !report.stack.isEmpty || report.kernelWait != nil { reports.increment() }
                if reports.value == enough { done.countDown() }
            }
            let thread = try LongThread(name: "lt-many")
            defer { thread.stop() }
            monitor.watch(thread)
            // Short tasks in poll, in nanosleep (read from /proc, not signalled) and spinning
            // (signalled), back to back: many end while being looked at.
            var fds: [Int32] = [0, 0]
            #expect(pipe(&fds) == 0)
            defer { close(fds[0]); close(fds[1]) }
            let readEnd = fds[0]
            for round in 0..<100_000 where !done.isOpen {
                switch round % 3 {
                case 0: try thread.perform { _ = stallInPoll(readEnd, milliseconds: 1) }
                case 1: try thread.perform { usleep(700) }
                default:
                    try thread.perform {
                        let clock = ContinuousClock()
                        let end = clock.now + .microseconds(700)
                        while clock.now < end {}
                    }
                }
                if round % 64 == 0 { try thread.sync {} }
            }
            #expect(done.wait(timeout: .seconds(30)), "\(reports.value) of \(all.value) reports with a stack or kernel wait")
            #expect(captured.value > 0, "the spinning tasks' reports carry stacks")
        }
    }
}

/// A pointer passed between threads in a test that orders its uses itself.
struct UnsafeSendable<T>: @unchecked Sendable {
    let value: T
    init(_ value: T) { self.value = value }
}
