/// A user callback attached to a thread's run loop through one CF item: the shared half of
/// ``RunLoopObserver`` and ``DescriptorSource``.
///
/// `cancel()` may race a callout on the loop thread, so the callback sits behind a lock: a callout
/// that starts after `cancel()` returned finds nothing to call, and the closure is released at once.
///
/// The lock holds the callback in a box, never the closure itself: `Locked` keeps its state at the
/// most general abstraction, and an `inout` access to a closure stored that way converts it to the
/// caller's calling convention and back, wrapping it in two more thunks each time. Each call went
/// through every earlier call's thunks: 64 more bytes of stack per call, until the thread's stack
/// overflowed (about 130,000 calls on 8 MiB; `CallbackDepthTests`).
final class AttachedCallback<Argument>: LoopAttachment, @unchecked Sendable {
    private final class Box: Sendable {
        let call: @Sendable (Argument) -> Void
        init(_ call: @escaping @Sendable (Argument) -> Void) { self.call = call }
    }

    // Guarded by its own lock.
    private let callback: Locked<Box?>
    private weak var core: ThreadCore?
    // Written once before the item is added to the loop (the thread's lock orders it).
    var engineItem: EngineItem?

    init(core: ThreadCore, callback: @escaping @Sendable (Argument) -> Void) {
        self.core = core
        self.callback = Locked(Box(callback))
    }

    /// Any thread. Idempotent.
    func cancel() {
        let released = callback.withLock { callback in
            defer { callback = nil }
            return callback
        }
        engineItem?.invalidate()
        core?.itemEnded(self)
        _ = released // the closure goes here, outside the lock
    }

    var isCancelled: Bool { callback.withLock { $0 == nil } }

    /// Loop thread: calls the callback unless cancelled.
    func callAsFunction(_ argument: Argument) {
        callback.withLock { $0 }?.call(argument)
    }
}
