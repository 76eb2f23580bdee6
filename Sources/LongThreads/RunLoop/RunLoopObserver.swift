import Foundation

/// The activities of one pass of a run loop, as CoreFoundation reports them to observers.
///
/// One pass: `entry` (once per run), then repeatedly `beforeTimers`, `beforeSources`, the
/// sources, and — when nothing was handled — `beforeWaiting`, sleep, `afterWaiting`, then the
/// timer or source that woke it; finally `exit`. A pass that handled a source polls again instead
/// of sleeping, so no `beforeWaiting` follows it.
public struct RunLoopActivity: OptionSet, Sendable, Hashable, CustomStringConvertible {
    /// The activities as CoreFoundation's `CFRunLoopActivity` bits.
    public let rawValue: UInt
    /// Activities from CoreFoundation's `CFRunLoopActivity` bits.
    public init(rawValue: UInt) { self.rawValue = rawValue }

    /// A run of the loop begins.
    public static let entry = RunLoopActivity(rawValue: 1 << 0)
    /// The loop is about to fire due timers.
    public static let beforeTimers = RunLoopActivity(rawValue: 1 << 1)
    /// The loop is about to run signalled sources (queued work among them; once the thread has
    /// lived a millisecond and has its own wake-up port, work posted to it asleep runs instead
    /// right after `afterWaiting`, as the port source that woke it).
    public static let beforeSources = RunLoopActivity(rawValue: 1 << 2)
    /// The loop is about to sleep.
    public static let beforeWaiting = RunLoopActivity(rawValue: 1 << 5)
    /// The loop woke up.
    public static let afterWaiting = RunLoopActivity(rawValue: 1 << 6)
    /// A run of the loop ends.
    public static let exit = RunLoopActivity(rawValue: 1 << 7)
    /// Every activity.
    public static let all: RunLoopActivity = [.entry, .beforeTimers, .beforeSources, .beforeWaiting, .afterWaiting, .exit]

    /// The activities' names, joined by `|`.
    public var description: String {
        let names: [(RunLoopActivity, String)] = [
            (.entry, "entry"), (.beforeTimers, "beforeTimers"), (.beforeSources, "beforeSources"),
            (.beforeWaiting, "beforeWaiting"), (.afterWaiting, "afterWaiting"), (.exit, "exit"),
        ]
        return names.filter { contains($0.0) }.map(\.1).joined(separator: "|")
    }
}

/// An observer of a LongThread's run-loop activities, from ``LongThread/addObserver(for:order:modes:_:)``.
///
/// - Runs on: the thread, at each matching activity, in the observer's modes; observers of one
///   activity run in ascending `order`.
/// - Ends: by ``cancel()`` (any thread), or when the thread stops. Cancelling releases the callback.
/// - Lifetime: the thread keeps the observer; dropping the handle does not end it (the same rule
///   as for ``LongThreadTimer`` and ``DescriptorSource``).
public final class RunLoopObserver: Sendable {
    let callback: AttachedCallback<RunLoopActivity>

    init(core: ThreadCore, callback: @escaping @Sendable (RunLoopActivity) -> Void) {
        self.callback = AttachedCallback(core: core, callback: callback)
    }

    /// Removes the observer from every mode and releases its callback. Idempotent.
    /// - Callable from: any thread, including the callback itself.
    public func cancel() { callback.cancel() }

    /// True once cancelled (or once its thread stopped).
    public var isCancelled: Bool { callback.isCancelled }
}

extension LongThread {
    /// Calls `callback` on this thread at each of `activities` of its run loop, in `modes`.
    ///
    /// - Parameters:
    ///   - activities: The run-loop activities to observe.
    ///   - order: Observers of one activity run in ascending order (the thread's own bookkeeping
    ///     runs first).
    ///   - modes: `.common` (the default) observes every common mode.
    ///   - callback: Called on this thread with the activity, inside the run loop: keep it short.
    /// - Returns: the observer, to cancel it.
    /// - Throws: ``LongThreadError/stopped`` once a stop has begun.
    /// - Callable from: any thread.
    public func addObserver(
        for activities: RunLoopActivity,
        order: Int = 0,
        modes: [RunLoop.Mode] = [.common],
        _ callback: @escaping @Sendable (RunLoopActivity) -> Void
    ) throws(LongThreadError) -> RunLoopObserver {
        let observer = RunLoopObserver(core: core, callback: callback)
        let item = EngineItem.observer(
            activities: activities.rawValue, order: order, targets: core.observerTargets
        ) { [weak target = observer.callback] activity in
            target?(RunLoopActivity(rawValue: activity))
        }
        observer.callback.engineItem = item
        try core.register(observer.callback, item: item, modes: modes)
        return observer
    }
}
