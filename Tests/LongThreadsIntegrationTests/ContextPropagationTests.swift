import InMemoryTracing
import LongThreads
import LongThreadsTracing
import Synchronization
import LongThreadsTestSupport
import Testing
import Tracing

/// A request id carried in the `ServiceContext`, as a server would set one per request.
private enum RequestID: ServiceContextKey {
    typealias Value = String
}

private func context(_ id: String) -> ServiceContext {
    var context = ServiceContext.topLevel
    context[RequestID.self] = id
    return context
}

/// A pinned actor: its jobs are items in the thread's queue.
private actor PinnedReader {
    let thread: LongThread
    nonisolated var unownedExecutor: UnownedSerialExecutor { thread.asUnownedSerialExecutor() }
    init(thread: LongThread) { self.thread = thread }
    func requestID() -> String? { LongThread.current === thread ? ServiceContext.current?[RequestID.self] : "off the thread" }
}

/// The propagator is process-wide: each test installs the one it needs, one test at a time.
@Suite("Context propagation", .serialized)
struct ContextPropagationTests {
    init() { ServiceContextPropagator.bootstrap() }

    @Test("run: the poster's ServiceContext is current inside the work")
    func run() async throws {
        let thread = try LongThread(name: "lt-ctx-run")
        defer { thread.stopAtTestEnd() }
        let seen = try await ServiceContext.withValue(context("run-1")) {
            try await thread.run { ServiceContext.current?[RequestID.self] }
        }
        #expect(seen == "run-1")
        #expect(try await thread.run { ServiceContext.current } == nil, "nothing leaks into later work")
    }

    @Test("sync: the poster's ServiceContext is current inside the work")
    func sync() throws {
        let thread = try LongThread(name: "lt-ctx-sync")
        defer { thread.stop() }
        let seen = try ServiceContext.withValue(context("sync-1")) {
            try thread.sync { ServiceContext.current?[RequestID.self] }
        }
        #expect(seen == "sync-1")
        #expect(try thread.sync { ServiceContext.current } == nil)
    }

    @Test("perform without waiting: the context rides with the queued work")
    func performWithoutWaiting() async throws {
        let thread = try LongThread(name: "lt-ctx-perform")
        defer { thread.stopAtTestEnd() }
        let seen = Mutex<[String?]>([])
        let done = Latch(count: 2)
        let gate = Latch()
        try thread.perform { gate.wait() }   // both items wait in the queue, long after their posters returned
        for id in ["a", "b"] {
            try ServiceContext.withValue(context(id)) {
                try thread.perform {
                    let value = ServiceContext.current?[RequestID.self]
                    seen.withLock { $0.append(value) }
                    done.countDown()
                }
            }
        }
        gate.countDown()
        #expect(await done.value())
        #expect(seen.withLock { $0 } == ["a", "b"])
    }

    @Test("a pinned actor's jobs see the caller's context (the task carries it)")
    func pinnedActor() async throws {
        let thread = try LongThread(name: "lt-ctx-actor")
        defer { thread.stopAtTestEnd() }
        let reader = PinnedReader(thread: thread)
        let seen = await ServiceContext.withValue(context("actor-1")) { await reader.requestID() }
        #expect(seen == "actor-1")
    }

    @Test("with no propagator installed, work runs without the context")
    func withoutPropagator() async throws {
        LongThread.contextPropagator = nil
        defer { ServiceContextPropagator.bootstrap() }
        let thread = try LongThread(name: "lt-ctx-none")
        defer { thread.stopAtTestEnd() }
        let seen = try await ServiceContext.withValue(context("dropped")) {
            try await thread.run { ServiceContext.current?[RequestID.self] }
        }
        #expect(seen == nil)
    }

    @Test("tracing tasks: a span per task, child of and linked to the poster's span, with its queue wait")
    func spans() async throws {
        let tracer = InMemoryTracer()
        ServiceContextPropagator.bootstrap(tracingTasks: true, tracer: tracer)
        defer { ServiceContextPropagator.bootstrap() }
        let thread = try LongThread(name: "lt-ctx-span")
        defer { thread.stopAtTestEnd() }
        let poster = tracer.startSpan("request", context: context("span-1"))
        let seen = try await ServiceContext.withValue(poster.context) {
            try await thread.run(label: "parse") { ServiceContext.current?[RequestID.self] }
        }
        poster.end()
        #expect(seen == "span-1", "the task's span context keeps the poster's values")
        let task = try #require(tracer.finishedSpans.first { $0.operationName == "parse" })
        let request = try #require(tracer.finishedSpans.first { $0.operationName == "request" })
        #expect(task.parentSpanID == request.spanID)
        #expect(task.traceID == request.traceID)
        #expect(task.links.count == 1)
        #expect(task.attributes["longthread.name"]?.toSpanAttribute() == .string("lt-ctx-span"))
        #expect(task.attributes["longthread.queue.wait_ns"] != nil)
    }

    @Test("perform(after:label:) names its span, with and without a group, as perform(at:label:) does")
    func delayedWorkLabel() async throws {
        let tracer = InMemoryTracer()
        ServiceContextPropagator.bootstrap(tracingTasks: true, tracer: tracer)
        defer { ServiceContextPropagator.bootstrap() }
        let thread = try LongThread(name: "lt-ctx-after")
        defer { thread.stopAtTestEnd() }
        let done = Latch(count: 3)
        try ServiceContext.withValue(context("after-1")) {
            try thread.perform(after: .milliseconds(1), label: "after") { done.countDown() }
            try thread.perform(after: .milliseconds(1), label: "after in a group", group: LongThread.WorkGroup()) { done.countDown() }
            try thread.perform(at: .now + .milliseconds(1), label: "at") { done.countDown() }
        }
        #expect(await done.value())
        // A span ends just after its work returns: a bounded wait for the third.
        let clock = ContinuousClock()
        let limit = clock.now + .seconds(10)
        while tracer.finishedSpans.count < 3, clock.now < limit { try await Task.sleep(for: .milliseconds(5)) }
        #expect(Set(tracer.finishedSpans.map(\.operationName)) == ["after", "after in a group", "at"])
    }
}
