import LongThreads
import LongThreadsMetrics
import Metrics
import MetricsTestKit
import Testing

@Suite("MetricsInstrument")
struct MetricsInstrumentTests {
    @Test("tasks run, latency, busy time, wake-ups and queue depth are recorded with the thread's dimension")
    func metricsAreRecorded() async throws {
        let metrics = TestMetrics()
        let instrument = MetricsInstrument(threadName: "lt-metrics", factory: metrics)
        let thread = try LongThread(name: "lt-metrics", options: .init(instrument: instrument))
        // A loop that never slept has no wake-up to count (seen on a busy CI machine: the posts
        // came before its first sleep): let it fall asleep, so the posts below wake it.
        let tid = try thread.kernelThreadID()
        #expect(await eventually { loopIsAsleep(tid) })
        for _ in 0..<100 { try thread.perform {} }
        _ = try await thread.run { 1 }
        await thread.stop()

        let dimensions = [("thread", "lt-metrics")]
        #expect(try metrics.expectCounter("longthread.tasks.run", dimensions).totalValue == 102) // with kernelThreadID's
        #expect(try metrics.expectCounter("longthread.wakeups", dimensions).totalValue >= 1)
        #expect(try !metrics.expectTimer("longthread.task.latency", dimensions).values.isEmpty)
        #expect(try !metrics.expectTimer("longthread.busy", dimensions).values.isEmpty)
        #expect(try metrics.expectGauge("longthread.queue.depth", dimensions).lastValue == 0)
    }

    @Test("a discarding stop counts the dropped items")
    func discardedAreCounted() async throws {
        let metrics = TestMetrics()
        let thread = try LongThread(
            name: "lt-metrics-dis",
            options: .init(instrument: MetricsInstrument(threadName: "lt-metrics-dis", factory: metrics))
        )
        let gate = Latch()
        try await thread.block(until: gate)
        for _ in 0..<9 { try thread.perform {} }
        thread.stop(waitUntilDone: false, pending: .discard)
        gate.countDown()
        await thread.stop()
        #expect(try metrics.expectCounter("longthread.tasks.discarded", [("thread", "lt-metrics-dis")]).totalValue == 9)
    }

    @Test("stalls are counted")
    func stallsAreCounted() async throws {
        let metrics = TestMetrics()
        let thread = try LongThread(
            name: "lt-metrics-stall",
            options: .init(instrument: MetricsInstrument(threadName: "lt-metrics-stall", factory: metrics))
        )
        defer { thread.stopAtTestEnd() }
        let monitor = try StallMonitor(threshold: .milliseconds(20)) { _ in }
        defer { monitor.unwatch(thread) }
        monitor.watch(thread)
        let gate = Latch()
        // In a pass that begins after `watch` returned (see LoggingInstrumentTests).
        try thread.perform(after: .milliseconds(1)) {
            try? thread.perform { gate.wait() }
        }
        let counted = await eventually {
            ((try? metrics.expectCounter("longthread.stalls", [("thread", "lt-metrics-stall")]).totalValue) ?? 0) >= 1
        }
        gate.countDown()
        #expect(counted)
        try await thread.run {}
        let total = try metrics.expectCounter("longthread.stalls", [("thread", "lt-metrics-stall")]).totalValue
        #expect(total == 1, "one stalled callout is reported once")
    }

    @Test("the metric objects are made once, in init, not per event")
    func metricsAreMadeOnce() throws {
        let metrics = TestMetrics()
        let instrument = MetricsInstrument(threadName: "lt-metrics-once", factory: metrics)
        let made = metrics.counters.count + metrics.timers.count + metrics.recorders.count
        let thread = try LongThread(name: "lt-metrics-once", options: .init(instrument: instrument))
        for _ in 0..<50 { try thread.perform {} }
        thread.stop()
        #expect(metrics.counters.count + metrics.timers.count + metrics.recorders.count == made)
    }
}
