import CoreFoundation
import Foundation
import LongThreads
import LongThreadsTestSupport
import Testing

@Suite("Run-loop modes")
struct ModeTests {
    let tracking = RunLoop.Mode("tracking")

    @Test("the scroll-view lesson: a default-mode timer pauses during a nested tracking run, a common-mode timer does not")
    func scrollViewLesson() throws {
        let thread = try LongThread(name: "lt-scroll")
        defer { thread.stop() }
        let defaultTicks = Counter()
        let commonTicks = Counter()
        try thread.schedule(every: .milliseconds(10), modes: [.default]) { _ in defaultTicks.increment() }
        try thread.schedule(every: .milliseconds(10), modes: [.common]) { _ in commonTicks.increment() }
        try thread.addCommonMode(tracking)
        let (duringDefault, duringCommon) = try thread.sync { [tracking] () -> (Int, Int) in
            let defaultBefore = defaultTicks.value
            let commonBefore = commonTicks.value
            try thread.runNested(in: tracking, until: .now + .milliseconds(200))
            return (defaultTicks.value - defaultBefore, commonTicks.value - commonBefore)
        }
        #expect(duringDefault == 0)
        #expect(duringCommon >= 5)
    }

    @Test("a nested tracking run serves only tracking work; default work runs after it, in order")
    func nestedRunIsolation() throws {
        let thread = try LongThread(name: "lt-isolation")
        defer { thread.stop() }
        let log = Recorder<String>()
        let done = try thread.sync { [tracking] () -> Bool in
            try? thread.perform { log.record("d1") }
            try? thread.perform(modes: [tracking]) { log.record("t1") }
            try? thread.perform { log.record("d2") }
            try? thread.perform(modes: [tracking]) { log.record("t2") }
            return try thread.runNested(in: tracking, until: .now + .seconds(10)) { log.count < 2 }
        }
        #expect(done)
        try thread.sync {}
        #expect(log.events == ["t1", "t2", "d1", "d2"])
    }

    @Test("a nested run in another mode sleeps while work for the enclosing mode waits: no spin")
    func nestedRunSleeps() throws {
        let thread = try LongThread(name: "lt-nested-sleeps")
        defer { thread.stop() }
        let inNestedRun = Latch()
        let cpu = Recorder<Duration>()
        try thread.perform { [tracking] in
            // Registers `tracking` first, so the run below is of a mode the thread knows.
            _ = try? thread.runNested(in: tracking, until: .now + .milliseconds(1)) { false }
            inNestedRun.countDown()
            let before = Self.threadCPUTime()
            // Returns after each handled source and runs again, as a modal loop does.
            _ = try? thread.runNested(in: tracking, until: .now + .milliseconds(300))
            cpu.record(Self.threadCPUTime() - before)
        }
        #expect(inNestedRun.wait())
        // Default-mode work, which the nested run may not run: it must wait without a busy loop.
        let ran = Latch()
        try thread.perform { ran.countDown() }
        #expect(ran.wait())
        let spent = try #require(cpu.events.first)
        // A sleeping loop spends well under a millisecond here; a spinning one the whole 300 ms.
        #expect(spent < .milliseconds(60), "the loop thread ran \(spent) of a 300 ms nested run")
    }

    static func threadCPUTime() -> Duration {
        var now = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now)
        return .seconds(now.tv_sec) + .nanoseconds(now.tv_nsec)
    }

    @Test("runNested returns false at its deadline")
    func nestedDeadline() throws {
        let thread = try LongThread(name: "lt-deadline")
        defer { thread.stop() }
        let result = try thread.sync { [tracking] in
            try thread.runNested(in: tracking, until: .now + .milliseconds(20))
        }
        #expect(result == false)
    }

    @Test(".common work runs in a mode added to the common set")
    func addCommonMode() throws {
        let thread = try LongThread(name: "lt-addcommon")
        defer { thread.stop() }
        try thread.addCommonMode(tracking)
        let mode = Recorder<String>()
        let ran = try thread.sync { [tracking] () -> Bool in
            try? thread.perform(modes: [.common]) { mode.record(RunLoop.current.currentMode?.rawValue ?? "?") }
            return try thread.runNested(in: tracking, until: .now + .seconds(10)) { mode.count == 0 }
        }
        #expect(ran)
        #expect(mode.events == ["tracking"])
    }

    @Test("a stop ends a nested run; the thread exits after the task")
    func stopEndsNestedRun() throws {
        let thread = try LongThread(name: "lt-stop-nested")
        let entered = Latch()
        let result = Recorder<Bool>()
        try thread.perform { [tracking] in
            entered.countDown()
            result.record((try? thread.runNested(in: tracking, until: .now + .seconds(30))) ?? true)
        }
        #expect(entered.wait())
        thread.stop()
        #expect(result.events == [false])
    }

    @Test("a stop ends a task's own run of a mode the thread never saw, and the thread exits")
    func stopEndsForeignNestedRun() throws {
        // The task runs the loop itself, in a mode with none of the thread's sources: no drain
        // can run there to notice the stop, so only the stop's own CFRunLoopStop ends the run.
        let thread = try LongThread(name: "lt-stop-foreign")
        let tid = try thread.kernelThreadID()
        let entered = Latch()
        let returned = Latch()
        try thread.perform {
            entered.countDown()
            // A source that never fires keeps the mode from being empty, which would end the run
            // at once.
            let mode = CFStringCreateWithCString(nil, "foreign", CFStringBuiltInEncodings.UTF8.rawValue)
            var context = CFRunLoopSourceContext()
            let source = CFRunLoopSourceCreate(nil, 0, &context)
            CFRunLoopAddSource(CFRunLoopGetCurrent(), source, mode)
            _ = CFRunLoopRunInMode(mode, 30, false)
            CFRunLoopRemoveSource(CFRunLoopGetCurrent(), source, mode)
            returned.countDown()
        }
        #expect(entered.wait())
        // Asleep after the task began: in its run (a stop before that run began is not its to see).
        #expect(waitUntil { loopIsAsleep(tid) })
        // On another thread, so that a stop that waits for the run's 30 s fails here instead.
        let stopped = Latch()
        Thread.detachNewThread {
            thread.stop()
            stopped.countDown()
        }
        #expect(returned.wait(timeout: .seconds(5)))
        #expect(stopped.wait(timeout: .seconds(5)))
    }
}
