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
/// - After stop: every job runs on this thread, or not at all. Jobs that reach the thread while
///   it stops — queued before the stop, enqueued while it drains, or queued when a `.discard` stop
///   drops the rest (a job has nobody to tell) — run on the thread before it ends, in order, and
///   before its ``ThreadBound`` values are destroyed and ``Options/tearDown`` runs. The thread's
///   last look finds no job queued and closes the door.
/// - After the end: a job that arrives once the thread has ended (a call to a pinned actor, or the
///   return of one of its methods from an `await` elsewhere) traps with a message that names the
///   thread and the cause ("BUG DETECTED: a job for LongThread … arrived after the thread
///   ended"). Running it on another thread would break what the pin promises (thread-affine state
///   touched off its thread); dropping it would leave its task, and every caller awaiting it,
///   suspended for ever with no word. So stop the thread only once its actors' last calls have
///   returned. SwiftNIO logs and drops such a task (its strict mode traps, as here).
/// - Init and deinit: an actor's `init` and its non-isolated `deinit` run on the caller's
///   thread (whoever makes it, whoever releases it last), not on this thread: make and close
///   thread-affine state in an isolated method, or hold it in a ``ThreadBound`` value, which is
///   made and destroyed on the thread.
/// - Callable from: any thread (the runtime calls ``enqueue(_:)``).
///
/// > Important: Keep the `LongThread` alive as long as any actor pinned to it: store it in the
/// > actor, as above. `unownedExecutor` does not retain it.
///
/// > Warning: Do not run the loop nested in the default mode (`RunLoop.current.run(until:)`) from
/// > actor code: jobs of the same actor would run inside the nested run, in the middle of the method
/// > that started it. Nested runs in a custom mode (``runNested(in:until:while:)``) do not serve jobs.
extension LongThread: SerialExecutor, TaskExecutor {
    /// Queues `job` on this thread, FIFO with `perform` work; called by the Swift runtime.
    ///
    /// - Runs on: this thread, in the default mode, also while a stop drains or discards.
    /// - After the end: traps (see the type's threading contract): the job can run nowhere else.
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
