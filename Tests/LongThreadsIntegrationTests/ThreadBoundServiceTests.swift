import Foundation
import LongThreads
import LongThreadsServiceLifecycle
import ServiceLifecycle
import ServiceLifecycleTestKit
import Testing

/// A value that is not `Sendable` and says which thread it ends on.
private final class Resource {
    let log: Recorder<String>
    init(log: Recorder<String>) { self.log = log }
    deinit { log.record("destroyed on \(LongThread.current?.name ?? Thread.current.name ?? "another thread")") }
}

@Suite("ThreadBound with LongThreadService")
struct ThreadBoundServiceTests {
    @Test("a graceful shutdown drains, destroys the thread's bound values on it, then runs tearDown, before run() returns")
    func gracefulShutdownDestroysBoundValues() async throws {
        let log = Recorder<String>()
        let service = try LongThreadService(name: "lt-svc-bound", options: .init(
            tearDown: { log.record("tearDown on \(LongThread.current?.name ?? "?")") }
        ))
        let resource = try await ThreadBound(on: service.thread) { Resource(log: log) }
        try await testGracefulShutdown { trigger in
            try await withThrowingTaskGroup(of: Void.self) { tasks in
                tasks.addTask { try await service.run() }
                for index in 0..<10 { try resource.perform { $0.log.record("used \(index)") } }
                trigger.triggerGracefulShutdown()
                try await tasks.waitForAll()
            }
        }
        #expect(log.events == (0..<10).map { "used \($0)" } + ["destroyed on lt-svc-bound", "tearDown on lt-svc-bound"])
        await #expect(throws: LongThreadError.stopped) { try await resource.run { _ in } }
    }
}
