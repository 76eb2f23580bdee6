import Glibc
import Logging
import LongThreads
import LongThreadsLogging
import Testing

@Suite("LoggingInstrument")
struct LoggingInstrumentTests {
    @Test("start, stop requested and stopped are logged with the thread's name and the drain counts")
    func lifecycleIsLogged() throws {
        let store = RecordingLogHandler.Store()
        let instrument = LoggingInstrument(logger: store.logger())
        let thread = try LongThread(name: "lt-log", options: .init(instrument: instrument))
        for _ in 0..<5 { try thread.perform {} }
        thread.stop()

        let messages = store.records.map(\.message)
        #expect(messages == ["LongThread started", "LongThread stop requested", "LongThread stopped"])
        #expect(store.records.allSatisfy { $0.level == .info && $0.metadata["longthread.name"] == "lt-log" })
        let requested = try #require(store.records(withMessage: "LongThread stop requested").first)
        #expect(requested.metadata["longthread.pending"] == "drain")
        let stopped = try #require(store.records(withMessage: "LongThread stopped").first)
        #expect(stopped.metadata["longthread.tasks.run"] == "5")
        #expect(stopped.metadata["longthread.tasks.discarded"] == "0")
    }

    @Test("a discarding stop logs how many items it dropped")
    func discardCountIsLogged() async throws {
        let store = RecordingLogHandler.Store()
        let thread = try LongThread(name: "lt-log-dis", options: .init(instrument: LoggingInstrument(logger: store.logger())))
        let gate = Latch()
        try await thread.block(until: gate)
        for _ in 0..<7 { try thread.perform {} }
        thread.stop(waitUntilDone: false, pending: .discard)
        gate.countDown()
        await thread.stop()
        let requested = try #require(store.records(withMessage: "LongThread stop requested").first)
        #expect(requested.metadata["longthread.pending"] == "discard")
        let stopped = try #require(store.records(withMessage: "LongThread stopped").first)
        #expect(stopped.metadata["longthread.tasks.run"] == "1")
        #expect(stopped.metadata["longthread.tasks.discarded"] == "7")
    }

    @Test("a stall is logged at warning with the task's label, while the task still runs")
    func stallIsLoggedAtWarning() async throws {
        let store = RecordingLogHandler.Store()
        let thread = try LongThread(name: "lt-log-stall", options: .init(instrument: LoggingInstrument(logger: store.logger())))
        defer { thread.stopAtTestEnd() }
        let monitor = try StallMonitor(threshold: .milliseconds(20)) { _ in }
        defer { monitor.unwatch(thread) }
        monitor.watch(thread)
        let gate = Latch()
        // Posted from a timer, i.e. in a run-loop pass that begins after `watch` returned: a pass
        // already under way when the monitor starts watching (the thread's first pass right after
        // `init`, say) is not tracked.
        try thread.perform(after: .milliseconds(1)) {
            try? thread.perform(label: "parse feed") { parseFeedStuck(on: gate) }
        }
        // The task holds the thread until the report is in: the test waits for the event, not a time.
        let reported = await eventually { !store.records(withMessage: "LongThread stalled").isEmpty }
        gate.countDown()
        #expect(reported)
        let stall = try #require(store.records(withMessage: "LongThread stalled").first)
        #expect(stall.level == .warning)
        #expect(stall.metadata["longthread.name"] == "lt-log-stall")
        #expect(stall.metadata["longthread.task.label"] == "parse feed")
        #expect(stall.metadata["longthread.stall.ms"] != nil)
        #expect(stall.metadata["longthread.queue.depth"] != nil)
        // The stalled thread's stack names the function it is stuck in.
        guard case .array(let frames) = stall.metadata["longthread.stack"] else {
            Issue.record("no stack: \(stall.metadata)")
            return
        }
        #expect(frames.contains { "\($0)".contains("parseFeedStuck") }, "\(frames)")
        #expect(stall.metadata["longthread.stack.source"] == "taken with a signal")
    }

    @Test("a stall asleep in the kernel is logged with its system call and the stack walked from its wait")
    func stallInTheKernelIsLoggedWithItsSystemCall() async throws {
        let store = RecordingLogHandler.Store()
        let thread = try LongThread(name: "lt-log-kernel", options: .init(instrument: LoggingInstrument(logger: store.logger())))
        defer { thread.stopAtTestEnd() }
        let monitor = try StallMonitor(threshold: .milliseconds(20)) { _ in }
        defer { monitor.unwatch(thread) }
        monitor.watch(thread)
        let (readEnd, writeEnd) = try #require(pipeEnds())
        defer { close(readEnd); close(writeEnd) }
        // Posted from a timer, as above; the task sleeps in poll(2), which is not signalled,
        // until the report is in.
        try thread.perform(after: .milliseconds(1)) {
            try? thread.perform(label: "wait for input") {
                var entry = pollfd(fd: readEnd, events: Int16(POLLIN), revents: 0)
                _ = poll(&entry, 1, -1)
            }
        }
        let reported = await eventually { !store.records(withMessage: "LongThread stalled").isEmpty }
        _ = write(writeEnd, "x", 1)
        #expect(reported)
        let stall = try #require(store.records(withMessage: "LongThread stalled").first)
        let stack = try #require(stall.metadata["longthread.stack"], "\(stall.metadata)")
        #expect("\(stack)".contains("poll"), "\(stack)")
        #expect(stall.metadata["longthread.stack.source"] == "read from the kernel's wait record, not interrupted")
        let wait = try #require(stall.metadata["longthread.kernel.wait"], "\(stall.metadata)")
        #expect("\(wait)".contains("poll"), "\(wait)")
    }

    @Test("a slow delivery is logged as such, not as a stall")
    func slowDeliveryIsLogged() async throws {
        let store = RecordingLogHandler.Store()
        let thread = try LongThread(name: "lt-log-late", options: .init(instrument: LoggingInstrument(logger: store.logger())))
        defer { thread.stopAtTestEnd() }
        let monitor = try StallMonitor(threshold: .seconds(60), deliveryThreshold: .milliseconds(5)) { _ in }
        defer { monitor.unwatch(thread) }
        monitor.watch(thread)
        let gate = Latch()
        try await thread.block(until: gate)
        try thread.perform(label: "late item") {}
        // The item waits behind the blocker until the report of its lateness could be made.
        try await Task.sleep(for: .milliseconds(20))
        gate.countDown()
        let reported = await eventually { !store.records(withMessage: "LongThread delivered late").isEmpty }
        #expect(reported)
        #expect(store.records(withMessage: "LongThread stalled").isEmpty)
        let late = try #require(store.records(withMessage: "LongThread delivered late").first)
        #expect(late.metadata["longthread.task.label"] == "late item")
        #expect(late.metadata["longthread.stack"] == nil)
    }

    @Test("levels are configurable: lifecycle records below the logger's level are not emitted")
    func levelsAreConfigurable() throws {
        let store = RecordingLogHandler.Store()
        var logger = store.logger()
        logger.logLevel = .info
        let instrument = LoggingInstrument(logger: logger, lifecycleLevel: .debug)
        let thread = try LongThread(name: "lt-log-lvl", options: .init(instrument: instrument))
        thread.stop()
        #expect(store.records.isEmpty)
    }
}

/// A pipe's read and write ends, or nil.
func pipeEnds() -> (Int32, Int32)? {
    var ends: [Int32] = [0, 0]
    return pipe(&ends) == 0 ? (ends[0], ends[1]) : nil
}

/// A task stuck in a function of its own, for the stack in the stall's log record.
@inline(never)
func parseFeedStuck(on gate: Latch) {
    gate.wait()
}
