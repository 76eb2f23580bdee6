/// The one way between the core and LongThreadsTestKit: what the core tells the test kit attached
/// to a thread (`LongThread.Options.harness`, which `ThreadCore.init` stores as `testSeam`), each
/// call named for the event. `TestHarness` is its one conformer.
///
/// The core makes these calls only from `ThreadCore+TestSeam.swift`, out of line, behind the
/// `Hints.harnessed` bit its paths test anyway (the drain per item in the word it loaded, a post
/// in the word it tests for timing): a thread without a test kit pays nothing for them. The kit
/// asks the core its few questions through that file too, and nowhere else.
///
/// Each event is reported after the state it changes, and never under the thread's lock
/// (`shared`): the kit's waits read that state under their own lock and take `shared` inside it.
/// So a wait that checked before the change is waiting by the time the event wakes it.
protocol TestSeam: AnyObject, Sendable {
    /// The clock the thread's time follows.
    var clock: VirtualClock { get }

    /// `ThreadCore.init`: the seam serves `core` from now on.
    func attached(to core: ThreadCore)

    /// Creator's thread, as the start begins: throws what the test wants the start to throw.
    func threadStarts() throws(LongThreadError)

    /// Posting thread, a post of `kind` a test may refuse (`PostKind.isRefusable`): the refusal
    /// the test asked for, taken, if any.
    func refusal(forPostOf kind: PostKind) -> LongThreadError?

    /// Posting thread: work went ahead of the waiting items (`PostKind.goesFirst`).
    func postedAhead()

    /// Loop thread, before the drain runs an entry the test holds (`PostKind.isHeld`; `labels`:
    /// the batch's untaken entries from it on): what to do. May wait for the test.
    func gate(_ core: ThreadCore, labels: @autoclosure () -> [String?]) -> TestGateAction

    /// Any thread: a stop began (a discarding one emptied the queue).
    func stopBegan()

    /// Loop thread: the timers' service begins; returns the request it answers.
    func timersServiceBegins() -> UInt64

    /// Loop thread: the timers' service that answers `request` ended.
    func timersServiceEnded(_ request: UInt64)

    /// Loop thread: a drain pass ended (the queue may be empty and the consumer inactive).
    func drainPassEnded()

    /// Loop thread: the drain marked the consumer inactive while its pass goes on: it parks for a
    /// caller's next request, or a run nested in an item began.
    func drainSuspended()

    /// Loop thread, its last act: the loop has exited (the engine is gone).
    func loopExited()
}

/// What the loop thread does at the gate before an entry the test holds (`TestSeam.gate`).
enum TestGateAction {
    /// Runs the entry.
    case pass
    /// Runs the timers `advance` asked for, then comes back.
    case serviceTimers
    /// Runs the work posted ahead of the waiting items meanwhile (the user's urgent work, the
    /// library's own posts: never held), then comes back.
    case runUrgentItems
    /// Begins the stop asked for after the previous item, then comes back.
    case stop(LongThread.PendingWork)
}
