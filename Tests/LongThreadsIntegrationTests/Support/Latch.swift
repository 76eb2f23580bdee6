import Foundation
import LongThreads

/// A count-down latch: `wait(timeout:)` returns true once `countDown()` was called `count` times.
/// Every wait is bounded; a timeout is a failure the test reports.
final class Latch: @unchecked Sendable {
    private let condition = NSCondition()
    // Guarded by `condition`.
    private var remaining: Int

    init(count: Int = 1) { remaining = count }

    func countDown() {
        condition.lock()
        remaining -= 1
        if remaining <= 0 { condition.broadcast() }
        condition.unlock()
    }

    @discardableResult
    func wait(timeout: TimeInterval = 10) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        condition.lock()
        defer { condition.unlock() }
        while remaining > 0 {
            if !condition.wait(until: deadline) { return remaining <= 0 }
        }
        return true
    }

    /// Waits from async code without blocking a cooperative thread.
    func value(timeout: TimeInterval = 10) async -> Bool {
        await withCheckedContinuation { continuation in
            Thread { continuation.resume(returning: self.wait(timeout: timeout)) }.start()
        }
    }
}

/// A counter from any thread.
final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    // Guarded by `lock`.
    private var count = 0

    func increment() {
        lock.lock()
        count += 1
        lock.unlock()
    }

    var value: Int {
        lock.lock()
        defer { lock.unlock() }
        return count
    }
}

/// Checks `condition` every millisecond, without blocking a cooperative thread, for at most `timeout`.
func eventually(timeout: Duration = .seconds(10), _ condition: () -> Bool) async -> Bool {
    let clock = ContinuousClock()
    let deadline = clock.now.advanced(by: timeout)
    while !condition() {
        if clock.now >= deadline { return false }
        try? await Task.sleep(for: .milliseconds(1))
    }
    return true
}

extension LongThread {
    /// Queues an item that holds the thread until `gate` opens; returns once it runs, so that
    /// `statistics.pending` counts only what queues behind it.
    func block(until gate: Latch) async throws {
        let running = Latch()
        try perform {
            running.countDown()
            gate.wait()
        }
        _ = await running.value()
    }
}
