/// Who made a post, and so what a test (LongThreadsTestKit) may do to it: its faults refuse and
/// its gate holds the user's work only. The library's own posts carry `.own` from the two places
/// that make them (`ThreadCore.enqueueOwn`, and a deadline bucket's timer in `DeadlineBucket`), so that no test fault or pause can delay or lose
/// them: a test thread then behaves as a real one does.
enum PostKind: UInt8 {
    /// The user's work, queued behind the waiting items: `perform`, `sync`, `run`, timers and
    /// deadline work. A test may refuse it; a paused test thread holds it until stepped.
    case queued
    /// A Swift concurrency job (an actor pinned to the thread, a task preferring it). Never
    /// refused: the runtime has nobody to throw to, and a refused job would run off the thread.
    /// Held by a paused test thread like queued work.
    case job
    /// The user's work posted ahead of the waiting items (`performAtFrontOfQueue`). A test may
    /// refuse it; never held (it jumps the queue between two items).
    case urgent
    /// The library's own: a `ThreadBound` value's destruction, the timer behind a deadline's work.
    /// Ahead of the waiting items; never refused, never held.
    case own
    /// The library's own, in the thread's order: a `ThreadBound` value's explicit release, behind
    /// the work queued for the value. Never refused; held by a paused test thread as the work
    /// ahead of it is (a real thread runs that work first too).
    case ownInOrder

    /// Whether the post goes to the head of the queue.
    @inline(__always)
    var goesFirst: Bool { self == .urgent || self == .own }

    /// Whether the library made it for itself (a test's view of the queue leaves it out).
    @inline(__always)
    var isOwn: Bool { self == .own || self == .ownInOrder }

    /// Whether a test's `refuseNextPost` applies to it.
    @inline(__always)
    var isRefusable: Bool { self == .queued || self == .urgent }

    /// Whether a paused test thread holds it until the test steps the thread.
    @inline(__always)
    var isHeld: Bool { self == .queued || self == .job || self == .ownInOrder }
}
