import Foundation

/// Events recorded in the order they happened, from any thread.
package final class Recorder<Event: Sendable>: @unchecked Sendable {
    package init() {}

    private let lock = NSLock()
    // Guarded by `lock`.
    private var recorded: [Event] = []

    package func record(_ event: Event) {
        lock.lock()
        recorded.append(event)
        lock.unlock()
    }

    package var events: [Event] {
        lock.lock()
        defer { lock.unlock() }
        return recorded
    }

    package var count: Int { events.count }
}

/// A counter from any thread.
package final class Counter: @unchecked Sendable {
    package init() {}

    private let lock = NSLock()
    private var count = 0

    package func increment(by amount: Int = 1) {
        lock.lock()
        count += amount
        lock.unlock()
    }

    package var value: Int {
        lock.lock()
        defer { lock.unlock() }
        return count
    }
}

/// An object whose deallocation can be observed through a weak reference.
package final class Tracked: Sendable {
    package let id: Int
    package init(_ id: Int = 0) { self.id = id }
}

/// A weak reference that can cross threads (the object itself is only compared with nil).
package final class WeakBox: @unchecked Sendable {
    package weak var value: AnyObject?
    package init(_ value: AnyObject?) { self.value = value }
}
