import CLongThreadsShims

/// The one blocking wait of the library: `sync`, `perform(waitUntilDone: true)`, `init`'s start
/// handshake and `stop`'s wait for the thread's end all park here.
///
/// Unset until signalled once, then set for good; a signal wakes every waiter. A waiter sleeps on a
/// futex; a signal costs a system call only when someone sleeps (`CLongThreadsShims_Event`). Only
/// `waitForReply()` spins first, and only while spinning can win (`WaitPolicy`);
/// the loop thread, having answered, lingers a few microseconds for the caller's next request
/// (`ThreadCore.linger`), so back-to-back round trips find it awake. The start wait sleeps at once:
/// the new thread often starts on the creator's CPU, where a spinning creator only delays it.
/// (`stop`'s wait for the thread's end is `pthread_join`, which spins first under the same rules:
/// `ThreadCore.join`.) Never `sched_yield`: that handed CPU hogs whole time slices.
/// Signal has release, wait acquire ordering, in C11 atomics that ThreadSanitizer understands.
///
/// A handle to storage with a stable address (a `ManagedBuffer` element), so an event is one
/// allocation (`sync` makes one per call); copies share the event.
struct OneShotEvent: @unchecked Sendable {
    private let storage: ManagedBuffer<Void, CLongThreadsShims_Event>

    init() {
        storage = .create(minimumCapacity: 1) { buffer in
            buffer.withUnsafeMutablePointerToElements { CLongThreadsShims_eventInit($0) }
        }
    }

    /// Sets the event and wakes every waiter. Any thread.
    func signal() { storage.withUnsafeMutablePointerToElements { CLongThreadsShims_eventSignal($0) } }

    /// `signal()` for a reply to a caller in `waitForReply()`: also tells the caller which CPU
    /// replied and from which thread, and this thread's next linger or park which CPU the caller
    /// was on, so that neither spins for a thread that shares its CPU (`WaitPolicy`). The loop
    /// thread, or any thread.
    func reply() { storage.withUnsafeMutablePointerToElements { Self.reply(to: $0) } }

    /// `reply()` to the event at `event`.
    static func reply(to event: UnsafeMutablePointer<CLongThreadsShims_Event>) {
        let learning = WaitLearning.current
        learning.pointee.lastWaiterCPU = CLongThreadsShims_eventReply(event, learning.pointee.replierKey)
    }

    /// Whether the event has been signalled. Any thread.
    var isSet: Bool { storage.withUnsafeMutablePointerToElements { CLongThreadsShims_eventIsSet($0) } }

    /// Waits for a reply from a LongThread (`sync`, `perform(waitUntilDone:)`): the caller may spin
    /// for a few microseconds before it sleeps, as `policy` rules (`WaitPolicy.replySpinBudget`),
    /// and learns from it. Any thread but the signaller's.
    /// `replier`: the thread expected to reply (its key, `ThreadCore.replierKey`), so that the
    /// caller skips the spin when that thread last replied from the caller's CPU.
    /// `replierAwake`: that thread was draining its queue when the request came (on a CPU), the one
    /// case where a caller spins with no spare CPU.
    func waitForReply(from replier: UnsafeRawPointer? = nil, replierAwake: Bool = false,
                      policy: WaitPolicy = .machine) {
        storage.withUnsafeMutablePointerToElements {
            Self.waitForReply($0, from: replier, replierAwake: replierAwake, policy: policy)
        }
    }

    /// `waitForReply` on the event at `event`.
    static func waitForReply(_ event: UnsafeMutablePointer<CLongThreadsShims_Event>, from replier: UnsafeRawPointer?,
                             replierAwake: Bool, policy: WaitPolicy) {
        let learning = WaitLearning.current
        if !CLongThreadsShims_eventIsSet(event) {
            let start = Int64(CLongThreadsShims_monotonicNanoseconds())
            let spinFor = policy.replySpinBudget(from: replier, replierAwake: replierAwake, now: start, &learning.pointee)
            var won = false
            if spinFor > 0 {
                let waited = CLongThreadsShims_eventSpin(event, start, spinFor)
                won = waited >= 0
                policy.replySpinEnded(won: won, after: waited, replierAwake: replierAwake, &learning.pointee)
            }
            if !won { CLongThreadsShims_eventWait(event, -1) }
        }
        learning.pointee.noteReplier(event.pointee.replier, cpu: event.pointee.replierCPU)
    }

    /// Sleeps until signalled; returns false if `timeout` passed first. `nil` waits for ever.
    @discardableResult
    func wait(timeout: Duration? = nil) -> Bool {
        let nanoseconds = timeout.map(\.clampedNanoseconds) ?? -1
        return storage.withUnsafeMutablePointerToElements { CLongThreadsShims_eventWait($0, nanoseconds) }
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
