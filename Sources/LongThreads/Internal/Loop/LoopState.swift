import Foundation
import Glibc

/// What only the loop thread touches: the drain's batch and caches, the callout stack, the linger
/// history, the counters it publishes later. `ThreadCore.loop` holds it; in debug builds every
/// access checks it is made on the loop thread (as NIO's `assertInEventLoop`), in release builds
/// nothing is checked and the fields cost what they cost as the core's own.
struct LoopState: ~Copyable {
    /// Entries taken from the queue, not yet run (`DrainBatch`).
    var batch = DrainBatch()
    /// The eligibility mask of the last mode a drain ran in, and the modes generation it saw.
    var eligibilityCache: (mode: String, mask: ModeTable.Mask)?
    var seenModesGeneration = 0
    /// Counted without the lock, published at the next refill (`ThreadCore.publishCounters`).
    var unpublished = ThreadCounts()
    /// The mode of each run of the loop on the stack, innermost last (entry and exit observer).
    var runModes = RunModeStack()
    /// Callouts on the stack (a task running the loop nested holds one while its nested ones run).
    var calloutDepth = 0
    /// Looks at work and due timers owed to the run that a callout at `depth` returns to, given
    /// when that callout ends (`engineDidExitRun`); innermost last, empty nearly always.
    var deferredLooks: [(depth: Int, work: Bool, timers: Bool)] = []
    /// Whether the loop times each item of the running callout (a monitor watches).
    var timingItems = false
    /// The label of the item running at the innermost level, kept while timed (so the label comes
    /// back when a task's nested run returns).
    var itemLabel: String?
    /// A slow delivery was reported and no item has started on time since (one report per backlog).
    var slowDeliveryReported = false
    /// When the last linger that found no work began (0: none pending): the next stamped post
    /// tells how late the caller came back (`linger`).
    var lingerMissedAt: UInt64 = 0
    /// The `ThreadBound` values alive on this thread, destroyed before `tearDown` (`BoundStorage`).
    var boundValues = BoundValues()
    /// When the first callout settles the thread in (monotonic ns; `settleIn`); `.max` once done.
    var settleInAt: UInt64 = .max
    /// `Options.setUp` and `tearDown`, out of `options` so that the thread releases each once it
    /// can no longer run: setUp once it ran, tearDown when the loop closes. A closure that holds
    /// (in a box it captured) a `ThreadBound` of this thread, or its handle, would otherwise keep
    /// this core alive from its own `options`: a cycle. Written by `ThreadCore.init`, before the
    /// loop thread claims this state.
    var hooks = Hooks()

    struct Hooks {
        var setUp: (@Sendable () throws -> Void)?
        var tearDown: (@Sendable () -> Void)?
    }
}

extension ThreadCore {
    /// The loop thread's own state (`LoopState`). Loop thread only: checked in debug builds.
    /// (`@exclusivity(unchecked)`: one thread touches it, and the drain reads it per item, where
    /// dynamic exclusivity checks showed up in profiles.)
    var loop: LoopState {
        @inline(__always) _read {
            assertOnLoopThread()
            yield loopStorage
        }
        @inline(__always) _modify {
            assertOnLoopThread()
            yield &loopStorage
        }
    }

    /// Debug builds: traps unless called on the loop thread (before the loop thread began, any
    /// thread may: the creator's `init`). Release builds: nothing.
    @inline(__always)
    func assertOnLoopThread(_ function: StaticString = #function) {
        #if DEBUG
        let owner = loopOwner.load(ordering: .relaxed)
        assert(owner == 0 || owner == UInt(pthread_self()),
               "BUG IN LongThreads: loop-thread state touched off the loop thread (\(function))")
        #endif
    }

    /// Loop thread, first thing: from now on `loop` is this thread's only (debug builds).
    func claimLoopState() {
        #if DEBUG
        loopOwner.store(UInt(pthread_self()), ordering: .relaxed)
        #endif
    }
}
