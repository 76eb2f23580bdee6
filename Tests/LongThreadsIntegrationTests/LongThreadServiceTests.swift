import Foundation
import Logging
import LongThreads
import LongThreadsServiceLifecycle
import ServiceLifecycle
import ServiceLifecycleTestKit
import Testing

/// A logger for the group that writes nowhere.
let quietLogger = Logger(label: "test") { _ in SwiftLogNoOpLogHandler() }

@Suite("LongThreadService")
struct LongThreadServiceTests {
    // MARK: - Graceful shutdown

    @Test("a ServiceGroup stops the service gracefully: accepted work drains, later work is refused, the thread ends")
    func gracefulShutdownDrains() async throws {
        let thread = try LongThread(name: "lt-svc-drain")
        let group = ServiceGroup(services: [LongThreadService(thread)], logger: quietLogger)
        let gate = Latch()
        let ran = Counter()
        try await testGracefulShutdown { trigger in
            try await withThrowingTaskGroup(of: Void.self) { tasks in
                tasks.addTask { try await group.run() }
                try await thread.block(until: gate)
                for _ in 0..<100 { try thread.perform { ran.increment() } }
                trigger.triggerGracefulShutdown()
                // The stop begins before the drain: from then on, posts are refused.
                #expect(await eventually { !thread.isRunning })
                #expect(throws: LongThreadError.stopped) { try thread.perform {} }
                gate.countDown()
                try await tasks.waitForAll()
            }
        }
        #expect(ran.value == 100)
        #expect(thread.hasEnded)
        #expect(thread.statistics.discarded == 0)
    }

    @Test("graceful shutdown drains, then runs the thread's tearDown on the thread, before run() returns")
    func gracefulShutdownTearsDown() async throws {
        let log = Recorder<String>()
        let service = try LongThreadService(name: "lt-svc-hooks", options: .init(
            setUp: { log.record("setUp on \(LongThread.current?.name ?? "?")") },
            tearDown: { log.record("tearDown on \(LongThread.current?.name ?? "?")") }
        ))
        let gate = Latch()
        try await testGracefulShutdown { trigger in
            try await withThrowingTaskGroup(of: Void.self) { tasks in
                tasks.addTask { try await service.run() }
                try await service.thread.block(until: gate)
                for index in 0..<3 { try service.thread.perform { log.record("item \(index)") } }
                trigger.triggerGracefulShutdown()
                #expect(await eventually { !service.thread.isRunning })
                gate.countDown()
                try await tasks.waitForAll()
                // run() returned: the thread has ended, tearDown included.
                #expect(log.events.last == "tearDown on lt-svc-hooks")
            }
        }
        #expect(log.events == ["setUp on lt-svc-hooks", "item 0", "item 1", "item 2", "tearDown on lt-svc-hooks"])
    }

    @Test("run() called after a graceful shutdown began stops the thread at once")
    func shutdownBeforeRun() async throws {
        let thread = try LongThread(name: "lt-svc-early")
        try await testGracefulShutdown { trigger in
            trigger.triggerGracefulShutdown()
            try await LongThreadService(thread).run()
        }
        #expect(thread.hasEnded)
    }

    // MARK: - Cancellation

    @Test("cancelling run() discards queued work, tells waiters, and returns once the thread ended")
    func cancellationDiscards() async throws {
        let thread = try LongThread(name: "lt-svc-cancel")
        let gate = Latch()
        try await thread.block(until: gate)
        let ran = Counter()
        for _ in 0..<10 { try thread.perform { ran.increment() } }
        let waiter = Task { try await thread.run { 1 } }
        #expect(await eventually { thread.statistics.pending == 11 })
        let service = Task { try await LongThreadService(thread).run() }
        service.cancel()
        #expect(await eventually { !thread.isRunning })
        await #expect(throws: LongThreadError.discarded) { try await waiter.value }
        gate.countDown()
        try await service.value
        #expect(ran.value == 0)
        #expect(thread.hasEnded)
    }

    // MARK: - The thread ends by itself

    @Test("run() returns when the thread is stopped by someone else")
    func returnsWhenThreadStops() async throws {
        let thread = try LongThread(name: "lt-svc-ext")
        let service = Task { try await LongThreadService(thread).run() }
        // Whether run() began before or after the stop, it must return once the thread ended.
        thread.stop(waitUntilDone: false)
        try await service.value
        #expect(thread.hasEnded)
    }

    @Test("in a group, a thread that ends by itself ends the group (successTerminationBehavior)")
    func threadEndEndsGroup() async throws {
        let thread = try LongThread(name: "lt-svc-grp")
        let group = ServiceGroup(services: [LongThreadService(thread)], logger: quietLogger)
        let run = Task { try await group.run() }
        thread.stop(waitUntilDone: false)
        await #expect(throws: ServiceGroupError.self) { try await run.value }
    }

    // MARK: - SIGTERM

    @Test("SIGTERM to a ServiceGroup that traps it drains and ends the thread")
    func sigtermDrains() async {
        await #expect(processExitsWith: .success) {
            weak let released = await Self.sigtermScenario()
            // Everything the scenario made goes once its tasks have unwound. A thread still alive
            // at exit would be a leak (LeakSanitizer reports its weak-reference side table).
            guard await eventually({ released == nil }) else { exit(5) }
        }
    }

    /// Runs a group with a LongThreadService, posts work, sends SIGTERM; returns the thread.
    private static func sigtermScenario() async -> LongThread {
        let thread = try! LongThread(name: "lt-svc-term")
        let probeStarted = Latch()
        // Runs as soon as the group started its services, by which time SIGTERM is trapped.
        let probe = ServiceGroupConfiguration.ServiceConfiguration(
            service: ProbeService(started: probeStarted)
        )
        var configuration = ServiceGroupConfiguration(
            services: [.init(service: LongThreadService(thread)), probe],
            logger: quietLogger
        )
        configuration.gracefulShutdownSignals = [.sigterm]
        let group = ServiceGroup(configuration: configuration)
        let ran = Counter()
        async let run: Void = group.run()
        guard await probeStarted.value() else { exit(2) }
        for _ in 0..<10 { try! thread.perform { ran.increment() } }
        kill(getpid(), SIGTERM)
        do { try await run } catch { exit(3) }
        guard ran.value == 10, thread.hasEnded else { exit(4) }
        return thread
    }
}

/// Signals that the group started its services, then waits for the graceful shutdown.
struct ProbeService: Service {
    let started: Latch

    func run() async throws {
        started.countDown()
        try await gracefulShutdown()
    }
}
