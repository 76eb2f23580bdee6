import Foundation

/// A value that lives on one ``LongThread``: made there, used only there, destroyed there.
///
/// The answer to a C library that is not thread-safe (a SQLite connection opened with
/// `SQLITE_OPEN_NOMUTEX`, a script engine, a GL context), and to any state one thread must own:
/// the value itself never leaves its thread, while the `ThreadBound` handle is `Sendable` and can
/// be held and passed anywhere (a global, an actor, a `Service`, a child task), without
/// `@unchecked Sendable` in your code. Chromium calls it `base::SequenceBound<T>`; SwiftNIO's
/// `NIOLoopBound` checks the thread at each access, where this type makes the wrong thread
/// impossible.
///
/// ```swift
/// let thread = try LongThread(name: "db")
/// let db = try await ThreadBound(on: thread) { try Database(path: path) }   // opened on "db"
/// try await db.run { try $0.insert(key, value) }                            // runs on "db"
/// let count = try db.sync { try $0.count() }                                // from blocking code
/// try db.perform { $0.vacuum() }                                            // fire and forget
/// ```
///
/// ## Threading contract
/// - Made on the thread: `init` runs `make` there and returns once it has (its error is thrown to
///   the caller). `Value` need not be `Sendable`; it may be `~Copyable` (a struct whose `deinit`
///   closes a handle).
/// - Used on the thread: ``run(label:_:)``, ``sync(label:_:)`` and ``perform(label:_:)`` hand
///   the value `inout` to a closure that runs on the thread, in the thread's order, like the
///   thread's own `run`, `sync` and `perform`. The closures are `@Sendable` (they capture nothing
///   that is not `Sendable`), `run`'s result is `Sendable` and `sync`'s is `sending`: the
///   compiler refuses a closure that would take the value (or a part of it that is not
///   `Sendable`) off the thread, by capture or by return.
/// - Destroyed on the thread: when the last handle is released (on any thread) and no
///   ``perform(label:_:)`` body for it is waiting, the value is destroyed on the thread, before
///   the next waiting item. When the thread ends, however it ends (``LongThread/stop(waitUntilDone:pending:)``
///   draining or discarding, its owner gone, its last handle released, a `LongThreadService`
///   shutting down), every value still bound to it is destroyed on the thread after its last item
///   and before ``LongThread/Options/tearDown`` runs, the newest first. A value is never
///   destroyed on another thread.
/// - A handle does not keep its thread running: ending the thread ends its values, and every
///   access afterwards (or once a stop has begun) throws ``LongThreadError/stopped``.
/// - Released on demand: ``release()`` destroys the value on its thread after the work queued
///   for it, and returns once its `deinit` has run; later accesses throw
///   ``LongThreadError/released``. ``thread`` names the thread it lives on.
/// - Several values may be bound to one thread; each body has its value to itself.
///
/// ## Rules
/// - Reentrancy: a body must not reach its own value again. On the thread, while a body for this
///   value runs, `sync` and `run` on it throw ``LongThreadError/reentrantAccess`` (where an
///   `inout` access would overlap the one in progress). A body that runs the thread's loop nested
///   (``LongThread/runNested(in:until:while:)``) lets other work in: a ``perform(label:_:)`` body
///   for the same value then waits until the running body returns, and `run`/`sync` callers get
///   ``LongThreadError/reentrantAccess``.
/// - Blocking: ``sync(label:_:)`` blocks its caller like ``LongThread/sync(label:_:)`` (not from
///   async code); called on the thread itself (from a body of another value), it runs inline.
///
/// Where an actor is enough (serialized state, no thread affinity), prefer the actor: it costs no
/// thread. See <doc:ThreadBoundValues>.
public final class ThreadBound<Value: ~Copyable>: Sendable {
    @usableFromInline let storage: BoundStorage<Value>

    /// Makes the value on `thread` and binds it there, suspending the calling task meanwhile.
    ///
    /// - Runs on: `thread`, in the default mode, in order behind the work already queued.
    /// - Parameters:
    ///   - thread: The thread the value lives on.
    ///   - label: Names the making in stall reports (``StallMonitor``).
    ///   - make: Makes the value, on `thread`.
    /// - Throws: what `make` throws (nothing is bound then), `CancellationError` if the task is
    ///   cancelled before `make` started, or a ``LongThreadError`` (``LongThreadError/stopped``
    ///   once a stop has begun).
    /// - Callable from: any task or actor, and from the thread itself (`make` then runs inline).
    public init(
        on thread: LongThread,
        label: String? = nil,
        _ make: @escaping @Sendable () throws -> Value
    ) async throws {
        let storage = BoundStorage<Value>(core: thread.core)
        try await thread.run(modes: nil, label: label) { try storage.fill(make) }
        self.storage = storage
    }

    /// Makes the value on `thread` and binds it there, blocking the caller meanwhile.
    ///
    /// - Runs on: `thread`, in the default mode, in order behind the work already queued; called on
    ///   `thread` itself, at once.
    /// - Parameters:
    ///   - thread: The thread the value lives on.
    ///   - label: Names the making in stall reports (``StallMonitor``).
    ///   - make: Makes the value, on `thread`.
    /// - Throws: what `make` throws (nothing is bound then), or a ``LongThreadError``.
    /// - Callable from: any thread; not from async code (use the `async` initializer there).
    @available(*, noasync, message: "blocks a cooperative thread: use 'try await ThreadBound(on:) { ... }'")
    public init(
        on thread: LongThread,
        label: String? = nil,
        _ make: @Sendable () throws -> Value
    ) throws {
        let storage = BoundStorage<Value>(core: thread.core)
        try thread.sync(modes: nil, label: label) { try storage.fill(make) }
        self.storage = storage
    }

    /// Releases the value, unless ``release()`` did: destroyed on its thread once no
    /// ``perform(label:_:)`` body for it waits, ahead of the other waiting items.
    deinit {
        if storage.releaseHandle() { storage.release() }
    }

    /// Whether the caller runs on the value's thread.
    public var isCurrent: Bool { storage.core.isCurrent }

    /// The thread the value lives on; nil once that thread's last handle is gone (the thread is
    /// then ending, and the value with it).
    ///
    /// A handle does not keep its thread running, so this is not a strong reference held for you:
    /// keep the thread's handle where you keep the value if you need it.
    /// - Callable from: any thread.
    public var thread: LongThread? { storage.core.handle }

    /// The value's thread for a post; `.released` after ``release()``, `.stopped` once the thread's
    /// last handle is gone. A stop that has begun is found by the post itself.
    @usableFromInline
    var postTarget: LongThread {
        get throws(LongThreadError) {
            if storage.isReleased { throw .released }
            guard let thread = storage.core.handle else { throw .stopped }
            return thread
        }
    }
}

// MARK: - Release

extension ThreadBound where Value: ~Copyable {
    /// Releases the value and suspends until it has been destroyed on its thread: when this
    /// returns, the value's `deinit` has run (Chromium's `SequenceBound::Reset`, awaited).
    ///
    /// - Order: work for the value queued before this call (`run`, `sync`, `perform`) runs first,
    ///   with the value; the value is destroyed after it, on the thread. Calls made after this one,
    ///   through this handle or any reference to it, throw ``LongThreadError/released``; a
    ///   ``perform(label:_:)`` body that raced with it and was queued still runs, before the value
    ///   is destroyed.
    /// - Queue limit: a release is never refused nor waits for room; with the thread's queue full
    ///   (``LongThread/Options/queueLimit``) it goes ahead of the waiting work, which then throws
    ///   ``LongThreadError/released``.
    /// - After stop: once a stop has begun the thread takes no more items, and destroys the value
    ///   at its end, after its last item and before ``LongThread/Options/tearDown``: this returns
    ///   then. After the thread ended, the value is gone already: this returns at once.
    /// - Repeated calls: each returns once the value is destroyed; the handle's `deinit` then does
    ///   nothing more.
    /// - Callable from: any task or actor, an actor pinned to the value's thread included (the
    ///   task suspends; the thread is not blocked).
    public func release() async {
        if storage.releaseHandle() { storage.releaseInOrder() }
        await storage.destroyed()
    }

    /// Releases the value and, with `waitUntilDone`, blocks until it has been destroyed on its
    /// thread (Chromium's `SequenceBound::SynchronouslyResetForTest`).
    ///
    /// - Order and after stop: as ``release()``.
    /// - Called on the value's thread: the value is destroyed at once when no body for it runs or
    ///   waits; otherwise after them, and this returns at once whatever `waitUntilDone` says (the
    ///   thread cannot wait for its own work).
    /// - Blocks: with `waitUntilDone`, until the value's `deinit` has run on the thread.
    /// - Parameter waitUntilDone: Whether to block until the value has been destroyed.
    /// - Callable from: any thread; not from async code (use ``release()``).
    ///
    /// > Warning: Waiting is only deadlock-free if the thread's current work does not itself wait
    /// > for the caller.
    @available(*, noasync, message: "blocks a cooperative thread: use 'await value.release()'")
    public func release(waitUntilDone: Bool) {
        if storage.releaseHandle() { storage.releaseInOrder() }
        guard waitUntilDone, !storage.core.isCurrent else { return }
        storage.waitUntilDestroyed()
    }
}

// MARK: - Access

extension ThreadBound where Value: ~Copyable {
    /// Runs `body` on the value's thread with the value, and returns its result; the calling task
    /// suspends meanwhile.
    ///
    /// - Runs on: the value's thread, in a run-loop pass in one of `modes`, in order (as
    ///   ``LongThread/run(modes:label:_:)``). Called on the thread itself: inline.
    /// - Cancellation: a task cancelled before `body` started skips it (`CancellationError`).
    /// - Parameters:
    ///   - modes: The run-loop modes `body` may run in.
    ///   - label: Names the work in stall reports (``StallMonitor``).
    ///   - body: Gets the value `inout`.
    /// - Returns: What `body` returns.
    /// - Throws: What `body` throws, `CancellationError`, ``LongThreadError/stopped`` once the
    ///   thread stops, ``LongThreadError/reentrantAccess`` (see the type's rules).
    /// - Callable from: any task or actor.
    @inlinable
    public func run<R: Sendable>(
        modes: [RunLoop.Mode],
        label: String? = nil,
        _ body: @escaping @Sendable (inout Value) throws -> R
    ) async throws -> R {
        try await run(modes: Optional(modes), label: label, body)
    }

    /// ``run(modes:label:_:)`` in the default mode.
    ///
    /// - Parameters:
    ///   - label: Names the work in stall reports (``StallMonitor``).
    ///   - body: Gets the value `inout`.
    /// - Returns: What `body` returns.
    /// - Throws: As ``run(modes:label:_:)``.
    @inlinable
    public func run<R: Sendable>(label: String? = nil, _ body: @escaping @Sendable (inout Value) throws -> R) async throws -> R {
        try await run(modes: nil, label: label, body)
    }

    // Inlinable, with the calls below, so that callers specialize it (see `BoundStorage`).
    @inlinable
    func run<R: Sendable>(
        modes: [RunLoop.Mode]?,
        label: String?,
        _ body: @escaping @Sendable (inout Value) throws -> R
    ) async throws -> R {
        let storage = storage
        return try await postTarget.run(modes: modes, label: label) { try storage.access(body) }
    }

    /// Runs `body` on the value's thread with the value and returns its result, blocking the
    /// caller meanwhile.
    ///
    /// - Runs on: the value's thread, in a run-loop pass in one of `modes`, in order (as
    ///   ``LongThread/sync(modes:label:_:)``). Called on the thread itself (from a body of another
    ///   value, a timer, a task): inline.
    /// - Parameters:
    ///   - modes: The run-loop modes `body` may run in.
    ///   - label: Names the work in stall reports (``StallMonitor``).
    ///   - body: Gets the value `inout`. Its result is `sending`: it may return what it made, not
    ///     the value itself (or a part of it that is not `Sendable`).
    /// - Returns: What `body` returns.
    /// - Throws: What `body` throws, ``LongThreadError/stopped`` once the thread stops, ``LongThreadError/released`` after ``release()``,
    ///   ``LongThreadError/discarded`` if a discarding stop drops it,
    ///   ``LongThreadError/reentrantAccess`` (see the type's rules).
    /// - Callable from: any thread; not from async code (use ``run(modes:label:_:)``).
    @available(*, noasync, message: "blocks a cooperative thread: use 'try await value.run { ... }'")
    @inlinable
    public func sync<R>(
        modes: [RunLoop.Mode],
        label: String? = nil,
        _ body: @Sendable (inout Value) throws -> sending R
    ) throws -> sending R {
        try sync(modes: Optional(modes), label: label, body)
    }

    /// ``sync(modes:label:_:)`` in the default mode.
    ///
    /// - Parameters:
    ///   - label: Names the work in stall reports (``StallMonitor``).
    ///   - body: Gets the value `inout`.
    /// - Returns: What `body` returns.
    /// - Throws: As ``sync(modes:label:_:)``.
    @available(*, noasync, message: "blocks a cooperative thread: use 'try await value.run { ... }'")
    @inlinable
    public func sync<R>(label: String? = nil, _ body: @Sendable (inout Value) throws -> sending R) throws -> sending R {
        try sync(modes: nil, label: label, body)
    }

    @inlinable
    func sync<R>(
        modes: [RunLoop.Mode]?,
        label: String?,
        _ body: @Sendable (inout Value) throws -> sending R
    ) throws -> sending R {
        let storage = storage
        return try postTarget.sync(modes: modes, label: label) { try storage.access(body) }
    }

    /// Queues `body` to run on the value's thread with the value, and returns at once.
    ///
    /// - Runs on: the value's thread, in a run-loop pass in one of `modes`, in order (as
    ///   ``LongThread/perform(modes:label:_:)``); called on the thread, queued too.
    /// - Lifetime: a queued body keeps the value alive: releasing the last handle meanwhile
    ///   destroys the value only after it ran. A stop that discards drops it unrun.
    /// - Parameters:
    ///   - modes: The run-loop modes `body` may run in.
    ///   - label: Names the work in stall reports (``StallMonitor``).
    ///   - body: Gets the value `inout`.
    /// - Throws: ``LongThreadError/stopped`` once the thread stops, ``LongThreadError/released`` after ``release()``, and what
    ///   ``LongThread/perform(modes:label:_:)`` throws.
    /// - Callable from: any thread, task or actor.
    public func perform(
        modes: [RunLoop.Mode],
        label: String? = nil,
        _ body: @escaping @Sendable (inout Value) -> Void
    ) throws(LongThreadError) {
        try perform(modes: Optional(modes), label: label, body)
    }

    /// ``perform(modes:label:_:)`` in the default mode.
    ///
    /// - Parameters:
    ///   - label: Names the work in stall reports (``StallMonitor``).
    ///   - body: Gets the value `inout`.
    /// - Throws: As ``perform(modes:label:_:)``.
    public func perform(label: String? = nil, _ body: @escaping @Sendable (inout Value) -> Void) throws(LongThreadError) {
        try perform(modes: nil, label: label, body)
    }

    private func perform(
        modes: [RunLoop.Mode]?,
        label: String?,
        _ body: @escaping @Sendable (inout Value) -> Void
    ) throws(LongThreadError) {
        let storage = storage
        // The queued body holds the value as a handle would, so that a release meanwhile cannot
        // destroy the value before the body ran. Held before `postTarget` looks for a release:
        // a release whose hold was given up before this one was taken is seen there.
        storage.retain()
        do {
            try postTarget.perform(waitUntilDone: false, modes: modes, label: label) { storage.performQueued(body) }
        } catch {
            storage.release()
            throw error
        }
    }
}
