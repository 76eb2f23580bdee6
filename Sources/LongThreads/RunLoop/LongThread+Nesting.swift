extension LongThread {
    /// How deeply the run loop of the calling thread is nested: 0 in work the thread runs from its
    /// own loop, 1 inside a run that work started (``runNested(in:until:while:)``), and so on.
    ///
    /// The counterpart of Chromium's `RunLoop::IsNestedOnCurrentThread()`: work that must not
    /// re-enter (a callback that is not re-entrant, a lock the outer item holds) can check it.
    /// Runs a task starts itself with `CFRunLoopRunInMode` count once the mode is known to the
    /// thread (work was posted or a nested run was made in it).
    ///
    /// - Callable from: any thread. Off every LongThread it is 0. It describes the caller's own
    ///   thread, so it never races.
    public static var nestingDepth: Int {
        guard let core = ThreadCore.current else { return 0 }
        return max(0, core.loop.runModes.count - 1)
    }
}
