import Synchronization

/// What a thread keeps of each `ThreadBound` value it holds, to destroy it when the thread ends.
protocol BoundValue: AnyObject {
    /// Loop thread: destroys the value now (the thread has left its loop).
    func destroyAtExit()
}

/// The value of one `ThreadBound` and its bookkeeping. The value, `busy`, `deferred` and
/// `destroyPending` are touched only on the value's thread; `holders` by any thread.
///
/// The access path is `@usableFromInline`/`@inlinable`, as `ThreadBound`'s calls are: a caller's
/// module specializes it for its value and result types. Unspecialized, each call looked up generic
/// metadata at run time (about 1,900 instructions of 8,000 per `sync`, callgrind).
@usableFromInline
final class BoundStorage<Value: ~Copyable>: BoundValue, @unchecked Sendable {
    let core: ThreadCore
    // The loop thread's fields are `@exclusivity(unchecked)`: one thread touches them, and the one
    // overlap that could happen (a body reaching its own value again) is refused through `busy`
    // before any access. Checked, their accesses cost about 300 instructions per call (callgrind).
    /// Nil until made, and once destroyed.
    @usableFromInline @exclusivity(unchecked) var value: Value? = nil
    /// A body for this value runs (an `inout` access is in progress).
    @usableFromInline @exclusivity(unchecked) var busy = false
    /// `perform` bodies that a nested run of the loop reached while a body ran: run after it.
    @usableFromInline @exclusivity(unchecked) var deferred: [@Sendable (inout Value) -> Void] = []
    /// The last holder left while a body ran: destroyed when it returns.
    @usableFromInline @exclusivity(unchecked) var destroyPending = false
    /// The handle and each queued `perform` body: the value is destroyed when none is left.
    private let holders = Atomic<Int>(1)
    /// The handle let go of the value (`ThreadBound.release()` or its `deinit`, whichever came
    /// first): set once, by the one that gives up the handle's hold. Any thread.
    @usableFromInline let handleReleased = Atomic<Bool>(false)
    /// Who waits for the value's destruction (`ThreadBound.release()`); `.done` once destroyed.
    private let destruction = Locked<Destruction>(.pending([]))

    private enum Destruction {
        case pending([DestructionWaiter])
        case done
    }

    private enum DestructionWaiter {
        case task(CheckedContinuation<Void, Never>)
        case thread(OneShotEvent)
    }

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

    @inlinable
    var isAlive: Bool {
        switch value {
        case .some: true
        case .none: false
        }
    }

    // MARK: - Access (loop thread)

    /// Runs `body` with the value. Throws `.reentrantAccess` while another body for it runs, and
    /// once it was destroyed `.released` (it was released) or `.stopped` (the thread ended).
    @inlinable
    func access<R>(_ body: (inout Value) throws -> R) throws -> R {
        guard !busy else { throw LongThreadError.reentrantAccess }
        guard isAlive else { throw isReleased ? LongThreadError.released : LongThreadError.stopped }
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

    /// The body returned. Inlined: nearly always nothing waits, and the generic, unspecialized
    /// check of the deferred bodies and the value cost about 1,900 instructions per call.
    @inlinable @inline(__always)
    func accessEnded() {
        if _slowPath(!deferred.isEmpty || destroyPending) {
            finishAccess()
        } else {
            busy = false
        }
    }

    /// The body returned, and deferred `perform` bodies or a destruction wait for it.
    @usableFromInline
    func finishAccess() {
        while !deferred.isEmpty, isAlive {
            let next = deferred.removeFirst()
            next(&value!)
        }
        deferred = []
        busy = false
        if destroyPending { destroy() }
    }

    // MARK: - Release (any thread)

    /// Whether the handle let go of the value: accesses throw `.released`.
    @inlinable
    var isReleased: Bool { handleReleased.load(ordering: .relaxed) }

    /// The handle lets go of the value (`ThreadBound.release()` or `deinit`). Returns false when it
    /// had already: the hold is given up once.
    func releaseHandle() -> Bool {
        handleReleased.compareExchange(expected: false, desired: true, ordering: .relaxed).exchanged
    }

    /// The handle's hold given up on the thread, in order behind the work queued before it: that
    /// work still finds the value. Refused once a stop has begun: the value is destroyed at the
    /// thread's end then. A full queue (`Options.queueLimit`) does not refuse it: it goes ahead of
    /// the waiting work instead, which then finds the value released (a release never waits for
    /// room, nor is lost).
    func releaseInOrder() {
        let release = { @Sendable in self.release() }
        if core.isCurrent {
            release()
            return
        }
        do throws(LongThreadError) {
            try core.enqueue(.fireAndForget(release), modes: nil, kind: .ownInOrder)
        } catch .queueFull {
            core.enqueueOwn(release)
        } catch {
            // `.stopped`: the thread destroys the value at its end.
        }
    }

    /// Suspends until the value has been destroyed (its `deinit` ran, on its thread).
    func destroyed() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            if !addWaiter(.task(continuation)) { continuation.resume() }
        }
    }

    /// Blocks until the value has been destroyed. Not on the value's thread while a body for it
    /// runs (it would wait for itself): the caller checks.
    func waitUntilDestroyed() {
        let event = OneShotEvent()
        if addWaiter(.thread(event)) { _ = event.wait() }
    }

    /// False when the value is destroyed already.
    private func addWaiter(_ waiter: DestructionWaiter) -> Bool {
        destruction.withLock { state in
            guard case .pending(var waiters) = state else { return false }
            waiters.append(waiter)
            state = .pending(waiters)
            return true
        }
    }

    /// Loop thread, right after the value's `deinit` ran: wakes whoever waits for it.
    private func announceDestroyed() {
        let waiters = destruction.withLock { state -> [DestructionWaiter] in
            defer { state = .done }
            if case .pending(let waiters) = state { return waiters }
            return []
        }
        for waiter in waiters {
            switch waiter {
            case .task(let continuation): continuation.resume()
            case .thread(let event): event.signal()
            }
        }
    }

    // MARK: - Holders (any thread)

    /// A queued `perform` body holds the value. Acquiring: a hold given up before this one (the
    /// handle's, by `release()`) brings its release mark with it (`ThreadBound.perform`).
    func retain() {
        holders.add(1, ordering: .acquiringAndReleasing)
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
        announceDestroyed()
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
