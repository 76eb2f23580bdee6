/// A user callback attached to a thread's run loop through one CF item: the shared half of
/// ``RunLoopObserver`` and ``DescriptorSource``.
///
/// `cancel()` may race a callout on the loop thread, so the callback sits behind a lock: a callout
/// that starts after `cancel()` returned finds nothing to call, and the closure is released at once.
final class AttachedCallback<Argument>: LoopAttachment, @unchecked Sendable {
    // Guarded by its own lock.
    private let callback: Locked<(@Sendable (Argument) -> Void)?>
    private weak var core: ThreadCore?
    // Written once before the item is added to the loop (the thread's lock orders it).
    var engineItem: EngineItem?

    init(core: ThreadCore, callback: @escaping @Sendable (Argument) -> Void) {
        self.core = core
        self.callback = Locked(callback)
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
        callback.withLock { $0 }?(argument)
    }
}
