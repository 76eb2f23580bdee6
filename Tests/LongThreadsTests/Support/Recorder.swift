import Foundation

/// Events recorded in the order they happened, from any thread.
final class Recorder<Event: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    // Guarded by `lock`.
    private var recorded: [Event] = []

    func record(_ event: Event) {
        lock.lock()
        recorded.append(event)
        lock.unlock()
    }

    var events: [Event] {
        lock.lock()
        defer { lock.unlock() }
        return recorded
    }

    var count: Int { events.count }
}

/// A counter from any thread.
final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0

    func increment(by amount: Int = 1) {
        lock.lock()
        count += amount
        lock.unlock()
    }

    var value: Int {
        lock.lock()
        defer { lock.unlock() }
        return count
    }
}

/// An object whose deallocation can be observed through a weak reference.
final class Tracked: Sendable {
    let id: Int
    init(_ id: Int = 0) { self.id = id }
}

/// A weak reference that can cross threads (the object itself is only compared with nil).
final class WeakBox: @unchecked Sendable {
    weak var value: AnyObject?
    init(_ value: AnyObject?) { self.value = value }
}
