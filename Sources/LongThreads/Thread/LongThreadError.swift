import Foundation

/// Why a LongThread refused or dropped work, or could not start.
public enum LongThreadError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The thread has begun stopping (or has stopped): it accepts no more work.
    ///
    /// Where Foundation raises `NSDestinationInvalidException` for a perform on a dead thread,
    /// LongThread refuses at the call site.
    case stopped
    /// The work was accepted, then dropped unrun by `stop(pending: .discard)`.
    case discarded
    /// `pthread_create` (or a setting the thread applies to itself) failed with `errno`; no thread
    /// runs. Foundation's `Thread` would instead never run, without a word.
    case cannotStart(errno: Int32)
    /// Work was posted with an empty list of run-loop modes, so it could never run.
    case noModes
    /// Work was posted in more distinct custom modes than one thread supports.
    case tooManyModes(limit: Int)
    /// A run-loop mode that cannot be used where it was given: a name containing NUL (CF would
    /// cut it there), or `.common` where a single mode is needed (``LongThread/addCommonMode(_:)``,
    /// ``LongThread/runNested(in:until:while:)``): `.common` names a set of modes, not a mode.
    case invalidMode(RunLoop.Mode)
    /// The run loop needed a resource the kernel refused, with its `errno` (`EMFILE`: the process
    /// is out of file descriptors). CoreFoundation takes 2 descriptors for each new mode of a
    /// thread's loop and has no error path: it would halt the process, so the thread refuses
    /// first. Nothing was queued; the thread runs on.
    case outOfResources(errno: Int32)
    /// The thread's queue is at its ``LongThread/QueueLimit``, and the thread's policy is
    /// ``LongThread/QueueLimit/WhenFull/throwError`` (or the caller is the thread itself, which
    /// must not wait for room it alone can make).
    case queueFull
    /// A caller waited for work that was taken back before it started: its
    /// ``LongThread/WorkGroup`` was cancelled (``LongThread/WorkGroup/cancelAll()``) during a
    /// `sync(timeout:group:)` or `perform(waitUntilDone:timeout:group:)`.
    case cancelled
    /// A bounded wait (`sync(timeout:)`, `perform(waitUntilDone: true, timeout:)`) ran out. If the
    /// work had not started it never runs; if it had, it completes on the thread and its result is
    /// dropped.
    case timedOut
    /// The thread's ``LongThread/Options/setUp`` threw this error; the thread has ended.
    case setUpFailed(any Error)
    /// A ``ThreadBound`` value was reached while a body for it was running on its thread: from
    /// inside that body (its `inout` access would overlap), or from a run of the thread's loop
    /// that the body started. Nothing ran.
    case reentrantAccess
    /// A ``ThreadBound`` value was reached after its ``ThreadBound/release()``: the value is
    /// destroyed (or about to be). Nothing ran.
    case released
    /// ``LongThread/runCurrentThread(name:options:_:)`` was called on a thread that is a
    /// LongThread already: from its work, its setUp or tearDown, or from inside another
    /// `runCurrentThread`. A thread runs one loop of the library's at a time; nothing changed.
    case alreadyALongThread
    /// A repeating timer was asked for with an interval of zero or below, which would fire without
    /// end (``LongThread/schedule(every:initialDelay:tolerance:modes:_:)``); nothing was scheduled.
    case invalidInterval(Duration)

    /// A sentence naming what happened, for logs.
    public var description: String {
        switch self {
        case .stopped: "LongThread: the thread is stopping or stopped and accepts no work"
        case .discarded: "LongThread: the work was discarded unrun by stop(pending: .discard)"
        case .cannotStart(let errno): "LongThread: the thread could not start (errno \(errno))"
        case .noModes: "LongThread: work posted with no run-loop modes could never run"
        case .tooManyModes(let limit): "LongThread: more than \(limit) custom run-loop modes on one thread"
        case .queueFull: "LongThread: the thread's queue is at its limit"
        case .cancelled: "LongThread: the work was cancelled before it started"
        case .timedOut: "LongThread: the wait for the work timed out"
        case .setUpFailed(let error): "LongThread: the thread's setUp threw \(error)"
        case .alreadyALongThread: "LongThread: runCurrentThread was called on a thread that is a LongThread already"
        case .invalidInterval(let interval): "LongThread: a repeating timer needs an interval above zero, got \(interval)"
        case .released: "LongThread: the ThreadBound value was released"
        case .reentrantAccess:
            "LongThread: a thread-bound value was reached from inside a body that was using it"
        case .invalidMode(let mode):
            "LongThread: run-loop mode \(String(reflecting: mode.rawValue)) cannot be used here "
                + "(a mode name may not contain NUL, and .common is a set of modes, not one to run or add)"
        case .outOfResources(let errno): "LongThread: the run loop could not get a kernel resource (errno \(errno))"
        }
    }

    /// Equal when the same case with equal values; two ``setUpFailed(_:)`` are equal when their
    /// errors describe themselves the same way (an `any Error` has no equality of its own).
    public static func == (lhs: LongThreadError, rhs: LongThreadError) -> Bool {
        switch (lhs, rhs) {
        case (.stopped, .stopped), (.discarded, .discarded), (.noModes, .noModes), (.queueFull, .queueFull),
             (.cancelled, .cancelled), (.timedOut, .timedOut), (.reentrantAccess, .reentrantAccess),
             (.alreadyALongThread, .alreadyALongThread), (.released, .released):
            true
        case (.cannotStart(let a), .cannotStart(let b)): a == b
        case (.tooManyModes(let a), .tooManyModes(let b)): a == b
        case (.invalidMode(let a), .invalidMode(let b)): a == b
        case (.outOfResources(let a), .outOfResources(let b)): a == b
        case (.invalidInterval(let a), .invalidInterval(let b)): a == b
        case (.setUpFailed(let a), .setUpFailed(let b)): String(reflecting: a) == String(reflecting: b)
        default: false
        }
    }
}
