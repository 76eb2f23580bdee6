/// A LongThread is a Swift concurrency executor: an actor can pin itself to it, and a task can
/// prefer it for its nonisolated code and its child tasks.
///
/// ```swift
/// actor Connection {
///     let thread: LongThread                     // hold it: the executor reference is unowned
///     nonisolated var unownedExecutor: UnownedSerialExecutor { thread.asUnownedSerialExecutor() }
///     init(thread: LongThread) { self.thread = thread }
///     func query() -> Int { /* runs on `thread`, isolated to this actor */ 42 }
/// }
///
/// await withTaskExecutorPreference(thread) {
///     async let a = work()                       // nonisolated child tasks run on `thread`
/// }
/// ```
///
/// ## Threading contract
/// - Runs on: this thread. Each job is a source0 item of the thread's run loop in the default
///   mode, the same kind of item as ``perform(waitUntilDone:label:_:)`` work.
/// - Order: jobs and `perform`/`sync`/`run` work share one FIFO queue, so an actor call made after
///   a `perform` by the same producer runs after that work.
/// - Isolation: every piece of code that runs on the thread runs serially with the thread's jobs,
///   so being on the thread *is* being isolated to it: `assumeIsolated`, `preconditionIsolated`
///   and `assertIsolated` of an actor pinned to the thread succeed inside `perform` work, timers
///   and observers too, and trap anywhere else (``checkIsolated()``).
/// - After stop: a job is never refused and never dropped (a job that does not run hangs its task
///   for ever). Jobs enqueued once a stop has begun, and jobs a `.discard` stop drops from the queue,
///   run on the thread's *successor*: a serial queue that starts once the thread has ended and runs
///   them one at a time, isolated to this executor. A pinned actor thus keeps working — serially,
///   every call completes — but no longer on this thread: there ``current`` is nil and ``isCurrent``
///   false. Jobs accepted before a `.drain` stop run on the thread, as the drain.
/// - Callable from: any thread (the runtime calls ``enqueue(_:)``).
///
/// > Important: Keep the `LongThread` alive as long as any actor pinned to it: store it in the
/// > actor, as above. `unownedExecutor` does not retain it.
///
/// > Warning: Do not run the loop nested in the default mode (`RunLoop.current.run(until:)`) from
/// > actor code: jobs of the same actor would run inside the nested run, in the middle of the method
/// > that started it. Nested runs in a custom mode (``runNested(in:until:while:)``) do not serve jobs.
/// > And do not let thread work block on async work once a stop has begun: the successor waits for
/// > the thread's end, so that work would wait for ever.
extension LongThread: SerialExecutor, TaskExecutor {
    /// Queues `job` on this thread, FIFO with `perform` work; called by the Swift runtime.
    ///
    /// - Runs on: this thread, in the default mode; after a stop began, on the thread's successor.
    /// - Blocks: never (one lock, and a wake-up only when the queue was empty).
    /// - Callable from: any thread.
    public func enqueue(_ job: consuming ExecutorJob) {
        core.enqueue(job)
    }

    /// The executor an actor returns from `unownedExecutor` to run on this thread.
    ///
    /// Its identity is this thread's internal state, not the handle: two calls return equal values,
    /// and jobs run isolated to it.
    /// - Callable from: any thread.
    public func asUnownedSerialExecutor() -> UnownedSerialExecutor {
        core.asUnownedSerialExecutor()
    }

    /// The executor `withTaskExecutorPreference(_:)`, `Task(executorPreference:)` and
    /// `addTask(executorPreference:)` use: this handle itself, whose ``enqueue(_:)`` queues on the
    /// thread.
    ///
    /// It must name this handle, not the thread's internal state: a task created with an executor
    /// preference retains the executor it is given and, when it completes, releases the object
    /// this value names. Such a task thus keeps the thread alive until it completes, even if its
    /// creator dropped every other reference.
    /// - Callable from: any thread.
    public func asUnownedTaskExecutor() -> UnownedTaskExecutor {
        UnownedTaskExecutor(ordinary: self)
    }

    /// Whether the caller runs isolated to this executor: ``isCurrent``.
    ///
    /// The runtime asks this when its own bookkeeping cannot tell, for example for
    /// `assumeIsolated` inside `perform` work. Never nil: the answer is always known.
    /// - Callable from: any thread, without side effects.
    public func isIsolatingCurrentContext() -> Bool? {
        core.isIsolatingCurrentContext()
    }

    /// Returns when called on this thread; traps anywhere else, naming the thread, because code
    /// that assumed this isolation off the thread could race with it.
    ///
    /// > Warning: Traps unless called on this thread (a precondition, in release builds too).
    /// - Callable from: any thread.
    public func checkIsolated() {
        core.checkIsolated()
    }
}
