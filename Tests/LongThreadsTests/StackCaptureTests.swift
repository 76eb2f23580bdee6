import CLongThreadsShims
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

@inline(never)
func stallInPoll(_ fd: Int32, milliseconds: Int32 = -1) -> Int32 {
    var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
    // poll is never restarted after a handler (signal(7)): like any poll loop, retry on EINTR.
    while true {
        let rc = poll(&entry, 1, milliseconds)
        if rc >= 0 || errno != EINTR { return rc }
    }
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

/// Returns read(2)'s result and errno: SA_RESTART restarts the read, so no EINTR.
@inline(never)
func stallInRead(_ fd: Int32) -> (Int, Int32) {
    var byte: UInt8 = 0
    let rc = read(fd, &byte, 1)
    return (rc, rc < 0 ? errno : 0)
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

        @Test("a spinning task: the stack names the function, first frames the task's")
        func spinning() throws {
            let (report, _) = try report("lt-spin") { stallSpinning(until: $0) }
            #expect(report.kind == .slowDispatch)
            #expect(names(report).contains { $0.contains("stallSpinning") }, "\(report)")
            // The run loop under the task is trimmed; the capture's own frames are not there.
            #expect(!names(report).contains { $0.contains("engineServiceWork") || $0.contains("CFRunLoopRun") }, "\(report)")
            #expect(!names(report).contains { $0.contains("handler") && $0.contains("stack") }, "\(report)")
        }

        /// The call a report's kernel wait names, and the function that made it.
        private func waitsIn(_ report: StallMonitor.Report) -> (call: String?, caller: String?) {
            (report.kernelWait?.systemCallName, report.kernelWait?.caller?.symbol)
        }

        @Test("a task in poll is not signalled: the report names poll; poll returns the data")
        func inPoll() throws {
            var fds: [Int32] = [0, 0]
            #expect(pipe(&fds) == 0)
            defer { close(fds[0]); close(fds[1]) }
            let (readEnd, writeEnd) = (fds[0], fds[1])
            let (report, result) = try report("lt-poll", release: { _ = write(writeEnd, "x", 1) }) { _ in stallInPoll(readEnd) }
            #expect(report.stack.isEmpty, "\(report)")
            #expect(["poll", "ppoll"].contains(waitsIn(report).call), "\(report)")
            // The wrapper that made the call: `poll`, or `__syscall_cancel_arch` with a newer glibc.
            #expect(waitsIn(report).caller != nil, "\(report)")
            #expect(result == 1)
        }

        @Test("a task in pthread_mutex_lock: the stack names it and the caller")
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
        }

        @Test("a task in read on a pipe is not signalled: the report names read; the read returns the data")
        func inRead() throws {
            var fds: [Int32] = [0, 0]
            #expect(pipe(&fds) == 0)
            defer { close(fds[0]); close(fds[1]) }
            let (readEnd, writeEnd) = (fds[0], fds[1])
            let (report, result) = try report("lt-read", release: { _ = write(writeEnd, "x", 1) }) { _ in stallInRead(readEnd) }
            #expect(report.stack.isEmpty, "\(report)")
            #expect(waitsIn(report).call == "read", "\(report)")
            // The wrapper that made the call: `read`, or `__syscall_cancel_arch` with a newer glibc.
            #expect(waitsIn(report).caller != nil, "\(report)")
            #expect(result?.0 == 1)
            #expect(result?.1 == 0)
        }

        @Test("a task blocked in write to a full pipe is not signalled: the report names the call, the write completes whole")
        func inBlockingWrite() throws {
            var fds: [Int32] = [0, 0]
            #expect(pipe(&fds) == 0)
            defer { close(fds[0]); close(fds[1]) }
            let (readEnd, writeEnd) = (fds[0], fds[1])
            let bytes = (0..<262_144).map { UInt8(truncatingIfNeeded: $0 % 251) }
            let reports = Recorder<StallMonitor.Report>()
            let reported = Latch()
            let monitor = try StallMonitor(threshold: .milliseconds(50)) { report in
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
            // Read everything back: no byte lost, none twice, in order.
            var received: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 65_536)
            while received.count < bytes.count {
                let rc = buffer.withUnsafeMutableBytes { read(readEnd, $0.baseAddress!, $0.count) }
                if rc <= 0 { break }
                received += buffer[..<rc]
            }
            #expect(wrote.wait())
            #expect(received == bytes)
            #expect(counts.events.first == [bytes.count], "one write(2), not disturbed: \(counts.events)")
            let report = try #require(reports.events.first)
            #expect(report.stack.isEmpty, "\(report)")
            #expect(report.kernelWait?.systemCallName == "write", "\(report)")
            #expect(report.kernelWait?.state == .sleeping, "\(report)")
            #expect(report.description.contains("write"), "\(report)")
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
