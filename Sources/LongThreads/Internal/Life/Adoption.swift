import CLongThreadsShims
import Glibc

/// The life of a LongThread on a thread it did not create (`LongThread.runCurrentThread`): the
/// same steps as a spawned thread's (`ThreadCore.threadMain`), then what a spawned thread leaves
/// to its exit done by hand, so that the thread goes on as it was.
extension ThreadCore {
    /// Calling thread: makes it this core's thread, calls `body` with `handle`, runs the loop until
    /// a stop, and gives the thread back: the engine's sources, observers and timer out of every
    /// mode, the thread-specific slot cleared, name, signal mask and scheduling restored. Then
    /// announces the end (a waiting `stop` returns). Throws what `body` throws (after a
    /// discarding stop), `.setUpFailed`, or `.cannotStart`.
    func runOnCurrentThread(as handle: LongThread, _ body: (LongThread) throws -> Void) throws {
        do throws(LongThreadError) {
            try ProcessSetUp.ensureDone()
        } catch {
            guard case .outOfResources(let errno) = error else { throw error }
            throw LongThreadError.cannotStart(errno: errno)
        }
        claimLoopState()
        let saved = SavedThreadState(changedBy: options)
        shared.withLock { $0.lifecycle.threadAdopted() }
        PosixThread.setCurrentName(name ?? "LongThread")
        WaitLearning.current.pointee.replierKey = replierKey
        if let error = Self.applyToCurrentThread(options.schedulingPolicy) {
            saved.restore()
            failStart(errno: error)
            throw LongThreadError.cannotStart(errno: error)
        }
        guard let engine = openLoop() else {
            saved.restore()
            throw LongThreadError.cannotStart(errno: handshake.startError ?? EAGAIN)
        }
        let failure = serveAdopted(engine, handle: handle, body)
        closeLoop()
        // What CF's thread-exit finaliser does for a spawned thread: this one outlives its loop.
        engine.removeFromLoop()
        saved.restore()
        announceExit()
        if let failure { throw failure }
    }

    /// Loop thread: setUp, `body`, the loop until a stop, the bound values and tearDown. Returns
    /// what failed: setUp (`.setUpFailed`, the thread never served) or `body` (the thread stopped,
    /// discarding what was posted meanwhile; tearDown ran).
    private func serveAdopted(_ engine: RunLoopEngine, handle: LongThread,
                              _ body: (LongThread) throws -> Void) -> (any Error)? {
        guard setUp() else {
            destroyBoundValues() // bound by setUp before it threw
            return LongThreadError.setUpFailed(takeSetUpError())
        }
        instrument?.record(.started(name: name))
        var failure: (any Error)?
        do {
            try body(handle)
        } catch {
            failure = error
            requestStop(.discard)
        }
        runUntilStopped(engine) // returns at once after a discarding stop
        endService()
        return failure
    }

    /// The scheduling `policy` asks for, applied to the calling thread: a spawned thread gets a
    /// real-time policy from its attributes, an adopted one sets it here. Returns an errno.
    private static func applyToCurrentThread(_ policy: LongThread.SchedulingPolicy) -> Int32? {
        var parameters = sched_param()
        let rc: Int32
        switch policy {
        case .fifo(let priority):
            parameters.sched_priority = priority
            rc = pthread_setschedparam(pthread_self(), SCHED_FIFO, &parameters)
        case .roundRobin(let priority):
            parameters.sched_priority = priority
            rc = pthread_setschedparam(pthread_self(), SCHED_RR, &parameters)
        default:
            return PosixThread.applyToCurrentThread(policy)
        }
        return rc == 0 ? nil : rc
    }
}
