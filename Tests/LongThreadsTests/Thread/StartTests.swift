import CLongThreadsShims
import CoreFoundation
import Foundation
@testable import LongThreads
import Testing

@Suite("Starting a thread")
struct StartTests {
    @Test("init names the pthread for the kernel, cut to 15 bytes, and keeps the whole name")
    func kernelName() throws {
        let thread = try LongThread(name: "com.taobao.weex.bridge")
        defer { thread.stop() }
        let tid = try thread.kernelThreadID()
        #expect(ProcessCensus.name(ofThread: tid) == "com.taobao.weex")
        #expect(thread.name == "com.taobao.weex.bridge")
    }

    @Test("a name is cut on a character boundary, never inside a UTF-8 sequence")
    func kernelNameUTF8() throws {
        let thread = try LongThread(name: "线程线程线程") // 3 bytes each: 15 bytes hold 5
        defer { thread.stop() }
        #expect(ProcessCensus.name(ofThread: try thread.kernelThreadID()) == "线程线程线")
    }

    @Test("an unnamed thread is called LongThread by the kernel")
    func unnamed() throws {
        let thread = try LongThread()
        defer { thread.stop() }
        #expect(thread.name == nil)
        #expect(ProcessCensus.name(ofThread: try thread.kernelThreadID()) == "LongThread")
    }

    @Test("init returns with the thread's run loop ready: work runs in the default mode, off the main thread")
    func loopRunsWhenInitReturns() throws {
        let thread = try LongThread(name: "lt-start-loop")
        defer { thread.stop() }
        let mode = try thread.sync { RunLoop.current.currentMode }
        #expect(mode == .default)
        let isMain = try thread.sync { Thread.isMainThread }
        #expect(!isMain)
    }

    @Test("init tells the creator the new thread's CPU, as a reply from it would")
    func creatorLearnsTheThreadsCPU() throws {
        // What the creator's first wait for a reply goes by: no spin when it runs on that CPU
        // (the rule itself: SameCPUSpinTests).
        let thread = try LongThread(name: "lt-start-cpu")
        defer { thread.stop() }
        let started = thread.core.handshake.loopCPU
        #expect(started >= 0)
        #expect(WaitLearning.current.pointee.notedCPU(of: thread.core.replierKey) == started)
    }

    @Test("a negative or overflowing stack size throws cannotStart(EINVAL); one beyond the address space cannotStart(EAGAIN); never a crash")
    func cannotStart() {
        #expect(throws: LongThreadError.cannotStart(errno: EINVAL)) {
            try LongThread(name: "lt-tiny-stack", options: .init(stackSize: -1000))
        }
        #expect(throws: LongThreadError.cannotStart(errno: EINVAL)) {
            try LongThread(name: "lt-max-stack", options: .init(stackSize: .max))
        }
        // 1 EiB: more than any Linux address space (47 or 56 bits), whatever the overcommit policy.
        #expect(throws: LongThreadError.cannotStart(errno: EAGAIN)) {
            try LongThread(name: "lt-huge-stack", options: .init(stackSize: 1 << 60))
        }
    }

    @Test("the requested stack size is the work's: the thread's stack adds glibc's minimum and the library's frames, and the work has it left")
    func stackSize() throws {
        let requested = 256 * 1024
        let thread = try LongThread(name: "lt-stack", options: .init(stackSize: requested))
        defer { thread.stop() }
        let (size, depth) = try thread.sync { (CLongThreadsShims_currentStackSize(), CLongThreadsShims_stackDepth()) }
        var attributes = pthread_attr_t()
        pthread_attr_init(&attributes)
        defer { pthread_attr_destroy(&attributes) }
        let glibc = CLongThreadsShims_minimumStack(&attributes)
        #expect(size >= requested + glibc, "the stack holds the work's size and glibc's share")
        #expect(size - depth >= requested, "at the work's entry, \(size - depth) bytes are left of \(size)")
    }

    @Test("a nice value applies to the thread only")
    func niceValue() throws {
        let thread = try LongThread(name: "lt-nice", options: .init(schedulingPolicy: .other(nice: 5)))
        defer { thread.stop() }
        let tid = try thread.kernelThreadID()
        let threadNice = getpriority(__priority_which_t(PRIO_PROCESS.rawValue), id_t(tid))
        let callerNice = getpriority(__priority_which_t(PRIO_PROCESS.rawValue), id_t(ProcessCensus.currentThreadID))
        #expect(threadNice == callerNice + 5 || threadNice == 19)
    }

    /// The kernel's default slice, asked for on this thread (0 asks for the default, which
    /// sched_getattr then reports). Cancels the test (skipped, with the reason) on a kernel
    /// before 6.12, which keeps no per-thread slice.
    static func kernelDefaultSlice() throws -> UInt64 {
        guard CLongThreadsShims_setCurrentThreadSlice(0) == 0 else {
            try Test.cancel("the kernel keeps no per-thread scheduler slice (before Linux 6.12): sched_setattr refused one")
        }
        let kernelDefault = CLongThreadsShims_currentThreadSlice()
        guard kernelDefault != 0 else { try Test.cancel("the kernel reports no scheduler slice (before Linux 6.12)") }
        return kernelDefault
    }

    @Test("a thread in its first millisecond runs on the kernel's scheduler slice: a short-lived thread skips the calls")
    func schedulerSliceOfAYoungThread() throws {
        let kernelDefault = try Self.kernelDefaultSlice()
        // A task that starts within 1 ms of `init` (timed from before it, so surely within 1 ms of
        // the thread's start) runs on the kernel's slice. On a machine too loaded for any of the
        // tries to start that soon, nothing can be seen: the test is skipped, saying so.
        for _ in 0..<20 {
            let before = CLongThreadsShims_monotonicNanoseconds()
            let young = try LongThread(name: "lt-slice-young")
            defer { young.stop() }
            let (slice, at) = try young.sync { (CLongThreadsShims_currentThreadSlice(), CLongThreadsShims_monotonicNanoseconds()) }
            if at - before < 1_000_000 {
                #expect(slice == kernelDefault)
                return
            }
        }
        try Test.cancel("no task of 20 new threads started within 1 ms of init: too loaded to see a young thread's slice")
    }

    @Test("past its first millisecond the thread asks for a 100 µs scheduler slice by default, keeping its nice value; nil keeps the kernel's")
    func schedulerSlice() throws {
        let kernelDefault = try Self.kernelDefaultSlice()
        let plain = try LongThread(name: "lt-slice")
        defer { plain.stop() }
        let nice = try LongThread(name: "lt-slice-nice", options: .init(schedulingPolicy: .other(nice: 5), schedulerSlice: .microseconds(500)))
        defer { nice.stop() }
        // The slice is requested by the first callout once a thread has lived 1 ms (a condition
        // on the clock, not a hope: both threads started before this point).
        let started = ContinuousClock.now
        while ContinuousClock.now < started + .milliseconds(1) { usleep(100) }
        #expect(try plain.sync { CLongThreadsShims_currentThreadSlice() } == 100_000)
        #expect(try nice.sync { CLongThreadsShims_currentThreadSlice() } == 500_000)
        let tid = try nice.kernelThreadID()
        let callerNice = getpriority(__priority_which_t(PRIO_PROCESS.rawValue), id_t(ProcessCensus.currentThreadID))
        let threadNice = getpriority(__priority_which_t(PRIO_PROCESS.rawValue), id_t(tid))
        #expect(threadNice == callerNice + 5 || threadNice == 19)
        let kernels = try LongThread(name: "lt-slice-nil", options: .init(schedulerSlice: nil))
        defer { kernels.stop() }
        let batch = try LongThread(name: "lt-slice-batch", options: .init(schedulingPolicy: .batch))
        defer { batch.stop() }
        let later = ContinuousClock.now
        while ContinuousClock.now < later + .milliseconds(1) { usleep(100) }
        #expect(try kernels.sync { CLongThreadsShims_currentThreadSlice() } == kernelDefault)
        #expect(try batch.sync { CLongThreadsShims_currentThreadSlice() } == kernelDefault)
    }

    @Test("an idle thread sleeps: no wake-ups while nothing is posted")
    func idleThreadDoesNotPoll() throws {
        let thread = try LongThread(name: "lt-idle")
        defer { thread.stop() }
        let tid = try thread.kernelThreadID()
        // Let the thread go back to sleep in its run loop after the sync above (a loop that
        // answered a caller on its own CPU first parks for that caller's next request, up to 4 ms:
        // `ThreadCore.park`), then watch it for a while. This sleep measures an absence (no
        // wake-ups), it does not wait for an event.
        #expect(waitUntil { !thread.core.shared.withLock { $0.queue.consumerParked } && threadIsSleeping(tid) })
        let before = try #require(ProcessCensus.voluntarySwitches(ofThread: tid))
        usleep(300_000)
        let after = try #require(ProcessCensus.voluntarySwitches(ofThread: tid))
        #expect(after == before)
    }
}
