import Foundation

/// Run-loop modes: the seeds' scroll-view lesson. Work, timers and observers belong to modes; a
/// run of the loop in one mode serves only that mode's items (and `.common` items, if the mode is
/// in the common set). The thread's own loop runs `.default`; a task can run it nested in another
/// mode for a while, as UIKit runs `UITrackingRunLoopMode` while a finger drags a scroll view.
extension LongThread {
    /// Adds `mode` to this thread's common modes: from now on `.common` work, timers and observers
    /// also run while the loop runs in `mode`.
    ///
    /// - Throws: ``LongThreadError/stopped`` once a stop has begun;
    ///   ``LongThreadError/invalidMode(_:)`` for `.common` (a set of modes, not one) or a name
    ///   containing NUL; ``LongThreadError/outOfResources(errno:)`` when CF cannot get the new
    ///   mode's descriptors.
    /// - Callable from: any thread.
    public func addCommonMode(_ mode: RunLoop.Mode) throws(LongThreadError) {
        try core.addCommonMode(mode)
    }

    /// Runs this thread's loop nested in `mode`, from inside one of its tasks, while `condition`
    /// holds and `deadline` has not passed. Meanwhile only `mode`'s items run (and `.common` items
    /// if `mode` is a common mode); the rest wait, in order, and run after this returns.
    ///
    /// - Parameters:
    ///   - mode: The mode to run the loop in.
    ///   - deadline: When the nested run ends at the latest.
    ///   - condition: Checked before the first pass and after each item the nested run handles.
    /// - Returns: true when `condition` became false, false when the deadline passed or a stop
    ///   ended the run.
    /// - Precondition: called on this thread (from one of its tasks).
    /// - Stop: a stop requested meanwhile ends the nested run; the thread then drains and exits
    ///   after the task that called this returns.
    /// - Throws: ``LongThreadError/invalidMode(_:)`` for `.common` (CF cannot run its common-modes
    ///   marker: run one of the common modes instead) or a name containing NUL;
    ///   ``LongThreadError/outOfResources(errno:)`` when CF cannot get a new mode's descriptors.
    @discardableResult
    public func runNested(
        in mode: RunLoop.Mode,
        until deadline: ContinuousClock.Instant,
        while condition: () -> Bool = { true }
    ) throws(LongThreadError) -> Bool {
        precondition(isCurrent, "LongThread.runNested(in:until:while:) must be called from a task on \(self)")
        return try core.runNested(in: mode, until: deadline, while: condition)
    }
}
