import Foundation

/// A count-down latch: `wait(timeout:)` returns true once `countDown()` was called `count` times.
/// Every wait in the tests is bounded; a timeout is a failure the test reports.
package final class Latch: @unchecked Sendable {
    private let condition = NSCondition()
    // Guarded by `condition`.
    private var remaining: Int

    package init(count: Int = 1) {
        remaining = count
    }

    package func countDown() {
        condition.lock()
        remaining -= 1
        if remaining <= 0 { condition.broadcast() }
        condition.unlock()
    }

    package var isOpen: Bool {
        condition.lock()
        defer { condition.unlock() }
        return remaining <= 0
    }

    @discardableResult
    package func wait(timeout: Duration = .seconds(10)) -> Bool {
        let deadline = Date().addingTimeInterval(Double(timeout.components.seconds) + Double(timeout.components.attoseconds) / 1e18)
        condition.lock()
        defer { condition.unlock() }
        while remaining > 0 {
            if !condition.wait(until: deadline) { return remaining <= 0 }
        }
        return true
    }
}

/// Waits until `condition` holds, checking it every millisecond, for at most `timeout`.
/// For states with no event to wait on (a thread leaving `/proc/self/task`); returns false on timeout.
package func waitUntil(timeout: Duration = .seconds(10), _ condition: () -> Bool) -> Bool {
    let clock = ContinuousClock()
    let deadline = clock.now.advanced(by: timeout)
    while !condition() {
        if clock.now >= deadline { return false }
        usleep(1000)
    }
    return true
}

extension Latch {
    /// Waits from async code without blocking a cooperative thread (the pool has one thread per
    /// core, and a blocked pool starves the very task a test waits for).
    package func value(timeout: Duration = .seconds(10)) async -> Bool {
        await withCheckedContinuation { continuation in
            Thread { continuation.resume(returning: self.wait(timeout: timeout)) }.start()
        }
    }
}

/// `waitUntil` for async tests: checks every millisecond without blocking a cooperative thread.
package func eventually(timeout: Duration = .seconds(10), _ condition: () -> Bool) async -> Bool {
    let clock = ContinuousClock()
    let deadline = clock.now.advanced(by: timeout)
    while !condition() {
        if clock.now >= deadline { return false }
        try? await Task.sleep(for: .milliseconds(1))
    }
    return true
}

/// Runs blocking `body` on a thread of its own and awaits its result, so a test that blocks for
/// seconds (stops, latches, joins) holds no thread of the cooperative pool: with one pool thread
/// per core, two such tests would otherwise starve every async test of the run.
package func offThePool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try body() }) }.start()
    }
}
