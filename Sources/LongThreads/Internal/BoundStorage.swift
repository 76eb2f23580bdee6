import Synchronization

/// What a thread keeps of each `ThreadBound` value it holds, to destroy it when the thread ends.
protocol BoundValue: AnyObject {
    /// Loop thread: destroys the value now (the thread has left its loop).
    func destroyAtExit()
}

/// The value of one `ThreadBound` and its bookkeeping. The value, `busy`, `deferred` and
/// `destroyPending` are touched only on the value's thread; `holders` by any thread.
final class BoundStorage<Value: ~Copyable>: BoundValue, @unchecked Sendable {
    let core: ThreadCore
    /// Nil until made, and once destroyed.
    private var value: Value? = nil
    /// A body for this value runs (an `inout` access is in progress).
    private var busy = false
    /// `perform` bodies that a nested run of the loop reached while a body ran: run after it.
    private var deferred: [@Sendable (inout Value) -> Void] = []
    /// The last holder left while a body ran: destroyed when it returns.
    private var destroyPending = false
    /// The handle and each queued `perform` body: the value is destroyed when none is left.
    private let holders = Atomic<Int>(1)

    /// Caller's thread, before the making is posted: every field but the value is written here,
    /// so the post orders them before the loop thread reads them (and the caller reads nothing
    /// the loop thread wrote: a class made there and handed back through a continuation is a
    /// race to ThreadSanitizer, which cannot see the concurrency runtime's ordering).
    init(core: ThreadCore) {
        self.core = core
    }

    /// Loop thread: makes the value and registers it with the thread, which destroys it at its end.
    func fill(_ make: () throws -> Value) throws {
        value = try make()
        core.loop.boundValues.insert(self)
    }

    private var isAlive: Bool {
        switch value {
        case .some: true
        case .none: false
        }
    }

    // MARK: - Access (loop thread)

    /// Runs `body` with the value. Throws `.reentrantAccess` while another body for it runs, and
    /// `.stopped` once it was destroyed (the thread ended).
    func access<R>(_ body: (inout Value) throws -> R) throws -> R {
        guard !busy else { throw LongThreadError.reentrantAccess }
        guard isAlive else { throw LongThreadError.stopped }
        busy = true
        defer { accessEnded() }
        return try body(&value!)
    }

    /// A queued `perform` body: runs it (after the running body if the loop was run nested), then
    /// lets go of the value as its holder.
    func performQueued(_ body: @escaping @Sendable (inout Value) -> Void) {
        if busy {
            deferred.append(body)
        } else if isAlive {
            busy = true
            body(&value!)
            accessEnded()
        }
        release()
    }

    private func accessEnded() {
        while !deferred.isEmpty, isAlive {
            let next = deferred.removeFirst()
            next(&value!)
        }
        deferred = []
        busy = false
        if destroyPending { destroy() }
    }

    // MARK: - Holders (any thread)

    /// A queued `perform` body holds the value.
    func retain() {
        holders.add(1, ordering: .relaxed)
    }

    /// The handle or a `perform` body lets go; the last one has the value destroyed on its thread:
    /// at once when on that thread, otherwise by an item queued ahead of the waiting ones (nothing
    /// waiting needs the value any more, and a queue limit or a mode must not keep it alive).
    func release() {
        guard holders.subtract(1, ordering: .acquiringAndReleasing).newValue == 0 else { return }
        if core.isCurrent {
            destroy()
            return
        }
        // Refused only once a stop has begun: the thread then destroys the value at its end.
        core.enqueueOwn { self.destroy() }
    }

    // MARK: - Destruction (loop thread)

    private func destroy() {
        if busy {
            destroyPending = true
            return
        }
        destroyPending = false
        guard isAlive else { return }
        core.loop.boundValues.remove(self)
        value = nil
    }

    func destroyAtExit() {
        destroy()
    }
}

/// The values bound to one thread, alive (loop thread only): destroyed, the newest first, when the
/// thread has left its loop, before `Options.tearDown` (`ThreadCore.destroyBoundValues`).
struct BoundValues {
    private var live: [ObjectIdentifier: (order: Int, value: any BoundValue)] = [:]
    private var made = 0

    var isEmpty: Bool { live.isEmpty }

    mutating func insert(_ value: any BoundValue) {
        made += 1
        live[ObjectIdentifier(value)] = (made, value)
    }

    mutating func remove(_ value: any BoundValue) {
        live[ObjectIdentifier(value)] = nil
    }

    /// Every value still alive, the newest first; the set is left empty.
    mutating func takeAll() -> [any BoundValue] {
        defer { live = [:] }
        return live.values.sorted { $0.order > $1.order }.map(\.value)
    }
}

extension ThreadCore {
    /// Loop thread, after the last item and before `tearDown`: destroys every value still bound to
    /// the thread. A value's `deinit` cannot bind a new one (the thread accepts no work by then);
    /// the loop is there for safety.
    func destroyBoundValues() {
        while !loop.boundValues.isEmpty {
            for value in loop.boundValues.takeAll() { value.destroyAtExit() }
        }
    }
}
