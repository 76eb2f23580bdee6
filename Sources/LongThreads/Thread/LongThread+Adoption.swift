import Foundation

extension LongThread {
    /// Runs the calling thread as a LongThread until it is stopped, then gives the thread back as
    /// it was.
    ///
    /// For a thread that must be the one: a daemon's main thread, or the thread a C library
    /// insists on being called from. (SwiftNIO's `withCurrentThreadAsEventLoop` and Android's
    /// `Looper.prepare()` and `loop()` do the same.) The calling thread serves work posted from
    /// other threads, timers, modes, descriptor sources, observers, actors pinned to it,
    /// ``ThreadBound`` values and a ``StallMonitor``, as a thread ``init(name:owner:options:)``
    /// starts would.
    ///
    /// ```swift
    /// // main.swift of a daemon whose C library must be called from the main thread
    /// try LongThread.runCurrentThread(name: "main") { thread in
    ///     Daemon.shared.start(on: thread)     // publish the handle; posts may begin at once
    /// }
    /// // here after thread.stop() (from a signal handler's thread, a service, a task)
    /// ```
    ///
    /// ## Life story
    /// 1. The thread becomes a LongThread: named `name` for the kernel, scheduled as `options`
    ///    asks, its run loop given the library's sources, ``Options/setUp`` run. If setUp throws,
    ///    the thread is given back and this throws ``LongThreadError/setUpFailed(_:)``; `body` is
    ///    not called.
    /// 2. `body` runs on the thread with the handle, before the loop's first pass: publish the
    ///    handle to whoever will post work or stop the thread. Work posted meanwhile (by `body` or
    ///    by other threads) runs once `body` returns; `sync` called from `body` runs inline. If
    ///    `body` throws, the thread stops discarding what was posted (each waiter is told
    ///    ``LongThreadError/discarded``), ``Options/tearDown`` runs, and this rethrows the error.
    /// 3. The loop runs until the thread is stopped, as a spawned thread's: by
    ///    ``stop(waitUntilDone:pending:)`` from any thread or from the thread's own work (an
    ///    object whose life should bound the thread's calls it in its `deinit`). Releasing every
    ///    other handle does not stop it: this function holds one until it returns. (There is no
    ///    `owner`: an object given as an argument lives as long as the call.)
    /// 4. Teardown, as on a spawned thread: accepted work drains (or is discarded), bound values
    ///    are destroyed, ``Options/tearDown`` runs. Then what a spawned thread's end does by
    ///    itself is undone by hand: the library's sources, observers and timer leave every mode of
    ///    the thread's run loop, the thread is no longer ``current``, and its kernel name, signal
    ///    mask and (when `options` changed it) scheduling are put back. Then a waiting `stop`
    ///    returns, and so does this function.
    ///
    /// ## What stays on the thread
    /// The thread's run loop itself (CF keeps one per thread): the custom modes the thread's work
    /// used stay in it, empty (CF never deletes a mode), as do modes added with
    /// ``addCommonMode(_:)`` to its common modes, and anything the thread's work added to the
    /// loop itself (a Foundation `Timer`, a `RunLoop.current.add(_:forMode:)`). The thread's
    /// other run-loop sources keep firing while it serves in the default mode. A later call may
    /// make the thread a LongThread again.
    ///
    /// ## The main thread
    /// On the process's main thread, the thread's run loop is `RunLoop.main`: its default mode is
    /// the one the LongThread runs, so Foundation timers and `perform`s scheduled on
    /// `RunLoop.main` fire between the thread's items, and `DispatchQueue.main` (with it the main
    /// actor, whose jobs go through that queue on Linux) is served by the same loop: main-actor
    /// code runs on the thread, interleaved with its work, while the loop sleeps or between
    /// passes. Nothing of it runs while a posted item runs, nor while a task runs the loop nested
    /// in a custom mode outside the common modes. Posted work runs on the main thread, so
    /// `MainActor.assumeIsolated` holds in it. Call this from the main thread's own code (a
    /// synchronous `main.swift`), not from a main-queue block or main-actor code: CF does not serve
    /// the main queue inside a block of it, so main-actor jobs would wait until the thread is
    /// stopped. After this
    /// returns, the main queue is served again only by whatever runs the main run loop next
    /// (`RunLoop.main.run()`, `dispatchMain()`).
    ///
    /// ## Threading contract
    /// - Blocks the calling thread until the thread is stopped. Not from async code: it would hold
    ///   a thread of the cooperative pool for the thread's whole life.
    /// - The handle works from any thread as a spawned thread's does. "Has ended" in its
    ///   documentation means, for this thread, "has left its loop and been given back": a waiting
    ///   ``stop(waitUntilDone:pending:)`` or ``waitUntilExit(timeout:)`` returns once the
    ///   thread is restored, just before this function returns. Once stopped the handle refuses
    ///   work with ``LongThreadError/stopped``, as a spawned thread's does.
    ///
    /// - Parameters:
    ///   - name: The thread's name while it serves, as for ``init(name:owner:options:)``; the
    ///     thread's own name comes back after.
    ///   - options: As for a spawned thread, but for ``Options/stackSize``, which is ignored (the
    ///     thread has its stack). A ``SchedulingPolicy`` other than `.inherited`, and a
    ///     ``Options/schedulerSlice``, are undone at the end as far as the kernel allows: an
    ///     unprivileged thread cannot lower its nice value again (`RLIMIT_NICE`), and keeps the
    ///     one it was given.
    ///   - body: Runs on the thread with the handle, before the loop's first pass.
    /// - Throws: ``LongThreadError/alreadyALongThread`` when the calling thread is a LongThread
    ///   already (called from its work, its setUp or tearDown, or from inside another
    ///   `runCurrentThread`), before anything changed; ``LongThreadError/cannotStart(errno:)``
    ///   when the scheduling cannot be had or the run loop cannot get its descriptors;
    ///   ``LongThreadError/setUpFailed(_:)``; or what `body` throws. The thread is given back in
    ///   every case.
    /// - Callable from: any thread that is not a LongThread, the main thread included.
    @available(*, noasync, message: "blocks its thread until the LongThread is stopped; call it from a thread of your own, or from a synchronous main")
    public static func runCurrentThread(
        name: String? = nil,
        options: LongThread.Options = .init(),
        _ body: (LongThread) throws -> Void
    ) throws {
        guard ThreadCore.current == nil else { throw LongThreadError.alreadyALongThread }
        let thread = LongThread(adopting: ThreadCore(name: name, owner: nil, options: options))
        try thread.core.runOnCurrentThread(as: thread, body)
    }
}
