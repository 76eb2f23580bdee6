import CLongThreadsShims

/// The one blocking wait of the library: `sync`, `perform(waitUntilDone: true)`, `init`'s start
/// handshake and `stop`'s wait for the thread's end all park here.
///
/// Unset until signalled once, then set for good; a signal wakes every waiter. A waiter spins for a
/// moment, then sleeps on a futex; a signal costs a system call only when someone sleeps
/// (`CLongThreadsShims_Event`). Signal has release, wait acquire ordering, in C11 atomics that
/// ThreadSanitizer understands.
final class OneShotEvent: @unchecked Sendable {
    private let storage: UnsafeMutablePointer<CLongThreadsShims_Event>

    init() {
        storage = .allocate(capacity: 1)
        CLongThreadsShims_eventInit(storage)
    }

    deinit { storage.deallocate() }

    /// Sets the event and wakes every waiter. Any thread.
    func signal() { CLongThreadsShims_eventSignal(storage) }

    /// Whether the event has been signalled. Any thread.
    var isSet: Bool { CLongThreadsShims_eventIsSet(storage) }

    /// Waits until signalled; returns false if `timeout` passed first. `nil` waits for ever.
    @discardableResult
    func wait(timeout: Duration? = nil) -> Bool {
        CLongThreadsShims_eventWait(storage, timeout.map(\.clampedNanoseconds) ?? -1)
    }
}

extension Duration {
    /// Whole nanoseconds, at least 0, at most `Int64.max`.
    var clampedNanoseconds: Int64 {
        let (seconds, attoseconds) = components
        if seconds < 0 { return 0 }
        let (scaled, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        if overflow { return .max }
        let (total, overflow2) = scaled.addingReportingOverflow(attoseconds / 1_000_000_000)
        return overflow2 ? .max : max(0, total)
    }
}
