import Dispatch

/// Jobs a stopped thread can no longer run: enqueued once a stop has begun, or dropped from the
/// queue by a discarding stop.
///
/// Why not refuse, drop or run them inline:
/// - The runtime has nobody to throw to, and a job that never runs hangs its task for ever,
///   leaking everything the task holds (and the caller of that actor method waits for ever).
/// - Running the job inline on the enqueuing thread would break the actor's mutual exclusion: two
///   threads enqueueing at once would run the same actor concurrently, and the enqueuer may be
///   inside another actor or in the middle of the runtime's own bookkeeping.
/// - Keeping the loop alive to serve late jobs would let a busy actor postpone `stop()` for ever.
///
/// So each stopped thread gets a *successor*: a serial dispatch queue that waits until the thread
/// has ended (the thread may still be running a job of the same actor: its current item, or a
/// drain) and then runs each job, in the order handed over, isolated to the thread's executor. The
/// actor keeps its guarantees (serial, isolated, every call completes); it loses the thread:
/// `LongThread.current` is nil there and thread-bound resources must not be touched.
///
/// The table entry lives while jobs are pending, and holds the core, so its identity stays unique.
enum OrphanedJobs {
    private struct Successor {
        let queue: DispatchQueue
        var pending: Int
    }

    // Guarded by its own lock. Keyed by core; an entry is removed when its last job has run.
    private static let successors = Locked<[ObjectIdentifier: Successor]>([:])

    /// Any thread. Runs `job` on `core`'s successor once the thread has ended.
    static func adopt(_ job: UnownedJob, of core: ThreadCore) {
        let key = ObjectIdentifier(core)
        // Queued under the lock, so jobs keep the order in which they were handed over, and a new
        // successor (after the old one drained and left the table) cannot overtake the old one.
        successors.withLock { table in
            var successor = table[key] ?? Successor(
                queue: DispatchQueue(label: "LongThread \(core.name.map { "\"\($0)\"" } ?? "(unnamed)") (stopped)"),
                pending: 0
            )
            successor.pending += 1
            table[key] = successor
            successor.queue.async {
                // The thread may still run a job isolated to this executor; its end is the hand-over.
                core.exited.wait()
                core.runJob(job)
                finished(key)
            }
        }
    }

    private static func finished(_ key: ObjectIdentifier) {
        successors.withLock { table in
            guard var successor = table[key] else { return }
            successor.pending -= 1
            table[key] = successor.pending == 0 ? nil : successor
        }
    }
}
