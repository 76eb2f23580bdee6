/// The executor path: Swift concurrency jobs ride the same queue as `perform` work.
///
/// The core, not the `LongThread` handle, is the executor's identity (`asUnownedSerialExecutor()`
/// wraps the core): the core lives as long as the pthread and is what a queued job can point at
/// without a reference count, whereas the handle may die on the thread while jobs still wait (its
/// `deinit` then drains them), and reaching it from the core is a weak load.
///
/// The task executor a *user* prefers is the handle (`LongThread.asUnownedTaskExecutor()`), not the
/// core: `Task(executorPreference:)` retains the executor value it is given (the handle) and
/// releases the identity of its unowned form when the task completes, so the two must be one
/// object. The core's own task executor below is only what a job runs with (`runJob`).
extension ThreadCore: SerialExecutor, TaskExecutor {
    /// Any thread. Queues `job` as a source0 item in the default mode, FIFO with `perform` work;
    /// once a stop has begun, still queues it while the thread drains (`enqueueWhileStopping`).
    @inline(__always)
    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        do {
            // Modes nil: the default mode, without building an array per job.
            try enqueue(.job(job, Unmanaged.passUnretained(self)), modes: nil, kind: .job)
        } catch {
            // With the default mode the only error is `.stopped`.
            enqueueWhileStopping(job)
        }
    }

    /// Any thread, once a stop has begun. Queues `job` while the thread has not ended: the thread
    /// runs it, as part of the drain or in its last look (`runRemainingJobs`), also when the stop
    /// discards (the runtime has nobody to tell, and a job that never runs hangs its task).
    /// Once the thread has ended, `jobAfterEnd`.
    @inline(never)
    private func enqueueWhileStopping(_ job: UnownedJob) {
        let accepted = withLockWaking { state, wake -> Bool in
            guard state.lifecycle.acceptsJobs else { return false }
            // Not refusable: admission only counts it, for the loop's `finished` to uncount.
            if hasQueueLimit { try? state.backpressure?.admit(refusable: false) }
            if state.queue.append(QueueEntry(item: .job(job, Unmanaged.passUnretained(self)), modes: ModeTable.defaultBit)) {
                wake.forWork(&state)
            }
            return true
        }
        if !accepted { jobAfterEnd() }
    }

    /// Any thread: a job for this executor arrived once the thread had ended. It cannot run on
    /// the thread, and running it on another would run code isolated to the thread elsewhere
    /// (the thread-affine state it guards touched from the wrong thread, or two threads in one
    /// actor), and dropping it would hang its task and every caller awaiting it with no word: it
    /// traps, naming the thread and the cause, as NIO's strict mode does for a task scheduled on a
    /// loop that has shut down.
    func jobAfterEnd() -> Never {
        fatalError(
            "BUG DETECTED: a job for LongThread \(Self.quoted(name)) (an actor pinned to it, or a task preferring it) "
                + "arrived after the thread ended; it cannot run on its thread and must not run on another. "
                + "Stop the thread only after the last call to its actors has returned."
        )
    }

    func asUnownedSerialExecutor() -> UnownedSerialExecutor {
        UnownedSerialExecutor(ordinary: self)
    }

    func asUnownedTaskExecutor() -> UnownedTaskExecutor {
        UnownedTaskExecutor(ordinary: self)
    }

    /// Loop thread. Runs `job` isolated to this executor
    /// and with this executor as its task executor: one method serves both protocols (their
    /// `enqueue` requirements are the same function), and on a one-thread executor both claims are
    /// true, since nothing else runs on the thread meanwhile.
    @inline(__always)
    func runJob(_ job: UnownedJob) {
        job.runSynchronously(isolatedTo: asUnownedSerialExecutor(), taskExecutor: asUnownedTaskExecutor())
    }

    /// Any thread. The runtime asks this when it cannot prove isolation from its own bookkeeping:
    /// inside `perform`, `sync` or `run` work, and in callbacks (timers, observers) on the thread.
    /// Everything on the thread is serial with the thread's jobs, so being on it is being isolated.
    func isIsolatingCurrentContext() -> Bool? {
        isCurrent
    }

    /// Any thread. Traps off the thread: see `LongThread.checkIsolated()`.
    func checkIsolated() {
        guard !isCurrent else { return }
        let here = ThreadCore.current.map { "LongThread \(Self.quoted($0.name))" } ?? "a thread that is not this LongThread"
        preconditionFailure(
            "BUG DETECTED: code isolated to LongThread \(Self.quoted(name)) (an actor pinned to it, or assumeIsolated) "
                + "ran on \(here); it may touch that thread's state concurrently with it"
        )
    }

    private static func quoted(_ name: String?) -> String {
        name.map { "\"\($0)\"" } ?? "(unnamed)"
    }
}
