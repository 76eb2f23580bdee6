/// Work whose caller blocks until it ran: `sync` and `perform(waitUntilDone: true)`.
///
/// Not generic: `sync` captures its result in the caller's frame, so no generic type is made per
/// call. Unspecialized generic code looked up `BlockingWork<T>`, `Result<T, _>` and `Optional<T>`
/// metadata at run time on every round trip (~3,600 instructions, callgrind).
///
/// The caller's closure may be non-escaping (made escapable with `withoutActuallyEscaping`), so the
/// closure is dropped before the caller is woken: nothing may hold it once `wait()` returns.
final class BlockingWork: WaitingWork, @unchecked Sendable {
    // Written before `done.signal()` by the one thread that runs or discards the work, read by the
    // caller after `done.waitForReply()` (release/acquire through the event).
    private var work: (() -> Void)?
    private var discarded = false
    private let done = OneShotEvent()
    let label: String?

    init(_ work: @escaping () -> Void, label: String? = nil) {
        self.work = ContextCarrier.carry(work, label: label)
        self.label = label
    }

    func run() {
        invoke()
        done.reply()
    }

    func discard() {
        work = nil
        discarded = true
        done.signal()
    }

    func releaseWork() {
        work = nil
    }

    /// Drops the work when it was never queued (the enqueue threw). Caller's thread.
    func abandon() {
        work = nil
    }

    /// Blocks until the work ran or was discarded; throws `.discarded` for the latter. `core`:
    /// the thread it was posted to (the same-CPU hint is kept per thread). `loopAwake`: the post
    /// found that thread draining its queue (`ThreadCore.enqueue`).
    func waitForOutcome(postedTo core: ThreadCore, loopAwake: Bool) throws(LongThreadError) {
        done.waitForReply(from: core.replierKey, replierAwake: loopAwake, policy: core.waitPolicy)
        if discarded { throw .discarded }
    }

    // A separate function so the closure's last reference dies here, before `done.signal()`.
    @inline(never)
    private func invoke() {
        guard let work = work.take() else {
            discarded = true
            return
        }
        work()
    }
}
