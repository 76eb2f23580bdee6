/// Every way to wake a thread's loop, and the one protocol for them.
///
/// The loop sleeps in one of two places: in CF (woken through the engine: its eventfd port once
/// installed, else a signal of the work source and `CFRunLoopWakeUp`, `RunLoopEngine.wake`), or
/// parked on the park bell for a caller's next request (`ThreadCore.park`). Whoever must wake it
/// decides under the thread's lock, where the queue says whether the loop parked
/// (`WorkQueue.unpark`, which also clears it, so the bell rings once), and rings only after
/// releasing the lock: the woken thread's first act is to take that lock. `ThreadCore.withLockWaking`
/// runs both halves, so no caller repeats them; the raw rings are called from this file only
/// (`WakeProtocolTests` reads the sources for any other caller).
struct Waker: Sendable {
    /// What a parked loop thread sleeps on. A struct around it: a waker costs a thread's life no
    /// allocation of its own, and a ring no load more.
    private let parkBell = Doorbell()

    /// Loop thread, under the lock, as it marks itself parked: the value a ring changes. Read under
    /// the lock, so a ring that follows (after a waker saw the loop parked) cannot be missed.
    var parkSeen: UInt32 { parkBell.value }

    /// Loop thread: sleeps on the park bell until it is rung after `seen` was read, or for
    /// `nanoseconds`.
    func sleepParked(seen: UInt32, forNanoseconds nanoseconds: Int64) {
        parkBell.wait(seen: seen, timeoutNanoseconds: nanoseconds)
    }

    /// Any thread, after the lock under which `wake` was decided is released: rings what it holds.
    @inline(__always)
    func ring(_ wake: borrowing Wake) {
        wake.engine?.wake()
        if wake.ringsParkBell { parkBell.ring() }
    }

    /// The number of rings so far (tests).
    var rings: UInt32 { parkBell.value }
}

/// What one section under the thread's lock found must be woken, rung by `Waker.ring` once the
/// lock is released. Each `mutating` function is called under the lock with the state it guards.
struct Wake {
    /// The engine to wake in CF, if any. Only the section that must wake the loop touches it
    /// (a shared refcount).
    fileprivate var engine: RunLoopEngine?
    fileprivate var ringsParkBell = false

    /// New work is queued and the loop must run it: rings the park bell when the loop is parked
    /// (the park's own refill takes the work), else wakes it in CF.
    @inline(__always)
    mutating func forWork(_ state: inout ThreadCore.SharedState) {
        if state.queue.unpark() {
            ringsParkBell = true
        } else {
            engine = state.engine
        }
    }

    /// Something a park must look at again changed (a stop, a timer's deadline, a descriptor
    /// source or observer, which forbid parking): ends a park, if any. A loop asleep in CF needs
    /// no wake-up for it (CF's own timer, source or stop reaches it).
    mutating func endingPark(_ state: inout ThreadCore.SharedState) {
        if state.queue.unpark() { ringsParkBell = true }
    }

    /// The loop must run a pass of CF's and its drain, wherever it sleeps (a new common mode, the
    /// first `statistics` read): ends a park, and wakes it in CF too (a park ends in the drain it
    /// waits in, which does not look at what changed).
    mutating func forPass(_ state: inout ThreadCore.SharedState) {
        endingPark(&state)
        engine = state.engine
    }
}

extension ThreadCore {
    /// Any thread: runs `body` under the thread's lock, then rings what it asked to wake in its
    /// `Wake` (also when it throws: a wake decided before the throw is owed).
    @inline(__always)
    func withLockWaking<Result, Failure: Error>(
        _ body: (inout SharedState, inout Wake) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        var wake = Wake()
        // Not `defer`: the compiler makes it a function of its own, called per post.
        do {
            let result = try shared.withLock { (state: inout SharedState) throws(Failure) -> Result in
                try body(&state, &wake)
            }
            waker.ring(wake)
            return result
        } catch {
            waker.ring(wake)
            throw error
        }
    }
}
