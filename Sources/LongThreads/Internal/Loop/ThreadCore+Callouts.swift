import CLongThreadsShims
import Glibc

/// Callouts: each drain, timer, descriptor handler and observer call is one, and a task whose
/// nested run returned resumes its own. Stall monitors read their starts (`CalloutWatch`). Loop
/// thread only.
extension ThreadCore {
    /// Loop thread, timing: the item (or resumed task) labelled `itemLabel` starts at `start`.
    /// A monitor that reported the previous item may have gone idle: this start wakes it, or the
    /// next slow item of the same drain would go unreported.
    func publishItemStart(_ start: UInt64) {
        if let itemLabel = loop.itemLabel { watch.runningLabel.withLock { $0 = (itemLabel, start) } }
        publishCalloutStart(start)
        // After the start's store (sequentially consistent, as the monitor's flag store, then its
        // load of the start): either this load sees the flag, or the monitor sees this start.
        if watch.wakeMonitorsAtNextItem.load(ordering: .sequentiallyConsistent) { wakeIdleMonitors() }
    }

    /// Loop thread: wakes the monitors that sleep with nothing to time (`threadBecameBusy`).
    @inline(never)
    private func wakeIdleMonitors() {
        watch.wakeMonitorsAtNextItem.store(false, ordering: .sequentiallyConsistent)
        watch.monitors.withLock { monitors in
            for monitor in monitors { monitor.threadBecameBusy() }
        }
    }

    /// Loop thread: moves the callout start. While a monitor samples this thread's stack (it saw
    /// the old start and is about to signal, or has signalled), waits here, in the library's own
    /// code, until the capture is over: the signal never interrupts the next callout. The two
    /// sequentially consistent accesses pair with the monitor's in `StackSampler.capture`.
    @inline(__always)
    func publishCalloutStart(_ start: UInt64) {
        watch.calloutStartedAt.store(start, ordering: .sequentiallyConsistent)
        if watch.stackSampleRequested.load(ordering: .sequentiallyConsistent) {
            while watch.stackSampleRequested.load(ordering: .sequentiallyConsistent) { sched_yield() }
        }
    }

    /// The low bit of `calloutStartedAt` that says the loop times each item (see there).
    static let timedBit: UInt64 = 1

    /// Loop thread: a callout (drain, timer, descriptor handler) begins, or (`resuming`) a task
    /// whose nested run returned goes on. Returns the time.
    @discardableResult
    @inline(__always)
    func beginCallout(resuming: Bool = false) -> UInt64 {
        let now = CLongThreadsShims_monotonicNanoseconds()
        if now >= loop.settleInAt { settleIn() }
        if !resuming { loop.calloutDepth += 1 }
        loop.timingItems = isMonitored
        guard loop.timingItems else {
            publishCalloutStart(max(now & ~Self.timedBit, 2))
            return now
        }
        if watch.kernelThreadID.load(ordering: .relaxed) == 0 { prepareForStackCapture() }
        if resuming {
            publishItemStart(now | Self.timedBit)
        } else {
            publishCalloutStart(now | Self.timedBit)
        }
        // After the store: a monitor that went idle before it is woken; one that goes idle after
        // it sees the store (StallMonitorState.run).
        // Inside the lock: a monitor unwatching meanwhile is released under it, not after.
        watch.monitors.withLock { monitors in
            for monitor in monitors { monitor.threadBecameBusy() }
        }
        return now
    }

    /// Loop thread, at its first timed callout or item, before its start is published: what a
    /// monitor's stack capture needs (the capture signal unblocked, the kernel thread id). Only
    /// captures of timed callouts are made, and a monitor that saw a timed start also sees this
    /// (the start's store is sequentially consistent); a thread no monitor watches pays neither
    /// system call.
    @inline(never)
    func prepareForStackCapture() {
        CLongThreadsShims_stackCaptureUnblockHere()
        watch.kernelThreadID.store(CLongThreadsShims_gettid(), ordering: .relaxed)
    }

    /// How long a thread lives before its first callout settles it in (`settleIn`).
    static let settleInDelayNanoseconds: UInt64 = 1_000_000

    /// Loop thread, at the first callout once the thread has lived `settleInDelayNanoseconds`:
    /// what pays off only over a long life. Requests `Options.schedulerSlice` (two system calls,
    /// `sched_getattr` and `sched_setattr`, ~4 µs of a new thread's life with CPU hogs beside it)
    /// and installs the engine's wake-up port (`RunLoopEngine.installWakePort`: ~6 µs of a life
    /// with hogs). A thread that ends within a millisecond gains nothing from either.
    @inline(never)
    func settleIn() {
        loop.settleInAt = .max
        PosixThread.requestSliceForCurrentThread(options.schedulerSlice)
        shared.withLock { state in
            // Not once a stop began: the loop is about to exit.
            if !state.lifecycle.isStopping { state.engine?.installWakePort() }
        }
    }

    /// Whether the loop wakes through its own port (`RunLoopEngine.installWakePort`). Any thread.
    var hasWakePort: Bool { shared.withLock { $0.engine?.hasWakePort ?? false } }

    /// Loop thread: a timer's or a descriptor source's callout, tracked for stall monitors.
    func runCallout(_ body: () -> Void) {
        _ = beginCallout()
        defer { endCallout() }
        body()
    }

    /// Loop thread: a callout ends; the loop turns again (at whatever depth it runs).
    @inline(__always)
    func endCallout() {
        loop.calloutDepth -= 1
        publishCalloutStart(0)
        if !loop.deferredLooks.isEmpty { takeDeferredLooks() }
    }

    /// Loop thread, at the end of a callout: signals the looks deferred for it (`engineDidExitRun`).
    @inline(never)
    private func takeDeferredLooks() {
        // Rare (a nested run returned with work for the enclosing one): the engine from the lock.
        guard let engine = shared.withLock({ $0.engine }) else { return loop.deferredLooks.removeAll() }
        while let last = loop.deferredLooks.last, last.depth > loop.calloutDepth {
            loop.deferredLooks.removeLast()
            if last.work { engine.signal() }
            if last.timers { engine.signalTimers() }
        }
    }
}
