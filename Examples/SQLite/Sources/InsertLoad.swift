import ExampleSupport
import Foundation
import LongThreads
import ServiceLifecycle

/// A `Service` that writes into a ``KeyValueStore`` until a graceful shutdown, counting each
/// write the store acknowledged: `tasks` tasks through the async `put`, and `threads` threads of
/// their own through the blocking one. Each writer finishes the write under way and stops.
///
/// In a `ServiceGroup`, list it after the store's service: the group shuts down in reverse
/// order, so the writers stop before the store's thread drains and closes the connection.
public struct InsertLoad: Service {
    public let store: KeyValueStore
    public let tasks: Int
    public let threads: Int
    /// Writes the store acknowledged.
    public let acknowledged = Tally()
    /// Writes refused (`LongThreadError.stopped`: the store's thread stopped first).
    public let refused = Tally()

    public init(store: KeyValueStore, tasks: Int, threads: Int) {
        self.store = store
        self.tasks = tasks
        self.threads = threads
    }

    public func run() async throws {
        let stopping = Flag()
        try await withGracefulShutdownHandler {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for writer in 0..<tasks {
                    group.addTask { try await writeAsync(as: "task\(writer)", until: stopping) }
                }
                for writer in 0..<threads {
                    group.addTask { try await writeBlocking(as: "thread\(writer)", until: stopping) }
                }
                try await group.waitForAll()
            }
        } onGracefulShutdown: {
            stopping.set()
        }
    }

    private func writeAsync(as writer: String, until stopping: Flag) async throws {
        var sequence = 0
        while !stopping.isSet {
            sequence += 1
            do {
                try await store.put("\(sequence)", for: "\(writer).\(sequence)")
                acknowledged.add()
            } catch LongThreadError.stopped {
                refused.add()
                return
            }
        }
    }

    /// A thread of its own, blocked in `sync` for each write; the task awaits its end.
    private func writeBlocking(as writer: String, until stopping: Flag) async throws {
        let store = store, acknowledged = acknowledged, refused = refused
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            Thread {
                var sequence = 0
                while !stopping.isSet {
                    sequence += 1
                    do {
                        try store.put("\(sequence)", for: "\(writer).\(sequence)")
                        acknowledged.add()
                    } catch LongThreadError.stopped {
                        refused.add()
                        break
                    } catch {
                        continuation.resume(throwing: error)
                        return
                    }
                }
                continuation.resume()
            }.start()
        }
    }
}

/// A count that any thread adds to.
public final class Tally: Sendable {
    private let count = Protected(0)
    public init() {}
    public func add() { count.withLock { $0 += 1 } }
    public var value: Int { count.withLock { $0 } }
}

/// A flag set once, read by any thread.
final class Flag: Sendable {
    private let value = Protected(false)
    func set() { value.withLock { $0 = true } }
    var isSet: Bool { value.withLock { $0 } }
}
