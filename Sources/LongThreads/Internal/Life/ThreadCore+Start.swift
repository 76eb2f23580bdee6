import CLongThreadsShims
import Foundation
import Glibc

/// The start: the creator spawns the pthread and waits until its loop is ready (`StartHandshake`);
/// the pthread's body runs the thread's whole life top-down (`threadMain`). The stop is in
/// `ThreadCore+Stop.swift`.
extension ThreadCore {
    /// Creates the pthread and returns once its run loop is ready to run. Creator's thread.
    func start() throws(LongThreadError) {
        if hints.load(ordering: .relaxed) & Hints.harnessed != 0 { try testSeamStart() }
        do throws(LongThreadError) {
            try ProcessSetUp.ensureDone()
        } catch {
            // The main thread's run loop could not get its descriptors: as for the thread's own.
            guard case .outOfResources(let errno) = error else { throw error }
            throw .cannotStart(errno: errno)
        }
        handshake.creatorLoadSample = WaitLearning.current.pointee.load
        // Read before the pthread exists: from then on the loop thread writes `handshake`.
        let ready = handshake.ready
        let thread = try PosixThread.spawn(options: options, running: self)
        shared.withLock { $0.lifecycle.threadCreated(thread) }
        ready.wait()
        if let startError = handshake.startError {
            waitUntilExit(timeout: nil)
            throw .cannotStart(errno: startError)
        }
        if handshake.setUpError != nil {
            waitUntilExit(timeout: nil)
            throw .setUpFailed(takeSetUpError())
        }
        // A new thread usually starts on its creator's CPU: then the creator's first wait for a
        // reply sleeps at once instead of spinning on the CPU the thread needs to reply.
        WaitLearning.current.pointee.noteReplier(replierKey, cpu: handshake.loopCPU)
    }

    /// The pthread's body (`PosixThread.spawn(options:running:)`).
    func threadMain() {
        claimLoopState()
        PosixThread.setCurrentName(name ?? "LongThread")
        let learning = WaitLearning.current
        learning.pointee.replierKey = replierKey
        // The affinity is inherited (spawn sets none), so the creator's sample holds here too: the
        // first linger is spared a `sched_getaffinity` (and maybe a /proc read).
        if handshake.creatorLoadSample.sampledAt > learning.pointee.load.sampledAt {
            learning.pointee.load = handshake.creatorLoadSample
        }
        if let error = PosixThread.applyToCurrentThread(options.schedulingPolicy) {
            failStart(errno: error)
            return
        }
        guard let engine = openLoop() else { return }
        let setUpSucceeded = setUp()
        if setUpSucceeded {
            instrument?.record(.started(name: name))
            handshake.loopCPU = CLongThreadsShims_currentCPU()
            handshake.ready.signal()
            runUntilStopped(engine)
            endService()
        } else {
            destroyBoundValues() // bound by setUp before it threw
        }
        closeLoop()
        if !setUpSucceeded { handshake.ready.signal() }
        announceExit()
    }

    /// Loop thread: the start failed with `errno` before the loop ran; tells the creator and
    /// announces the end.
    func failStart(errno: Int32) {
        handshake.startError = errno
        shared.withLock { $0.lifecycle.startFailed() }
        handshake.ready.signal()
        announceExit()
    }

    /// Loop thread, once its scheduling is set: makes the engine (and so the thread's run loop)
    /// and makes this core the thread's current one. Nil, after `failStart`, when out of
    /// descriptors (CF would have halted the process making the loop).
    func openLoop() -> RunLoopEngine? {
        let (settleInAt, overflow) = CLongThreadsShims_monotonicNanoseconds().addingReportingOverflow(settleInDelay)
        loop.settleInAt = overflow ? .max : settleInAt
        let engine: RunLoopEngine
        do throws(LongThreadError) {
            // Wake-ups are reported from the start only to whom needs each one: an owner to check
            // (`checkOwner`) or an instrument. `statistics` turns counting on when first read.
            engine = try RunLoopEngine(delegate: self, countsWakeUps: watchesOwner || instrument != nil)
        } catch {
            let errno: Int32 = if case .outOfResources(let errno) = error { errno } else { EAGAIN }
            failStart(errno: errno)
            return nil
        }
        pthread_setspecific(Self.currentKey, Unmanaged.passUnretained(self).toOpaque())
        shared.withLock { state in
            state.engine = engine
            state.lifecycle.loopStarted()
        }
        return engine
    }

    /// Loop thread, after the last item, before the loop is torn down, however the stop came: the
    /// thread's bound values first, so that tearDown may close what they used.
    func endService() {
        destroyBoundValues()
        loop.hooks.tearDown?()
    }

    /// Loop thread, after its service: the loop's exit (`finishExit`), then the thread is no
    /// longer this core's, and the hooks are let go (before the end is announced, so that a
    /// stopper finds them released).
    func closeLoop() {
        finishExit()
        pthread_setspecific(Self.currentKey, nil)
        loop.hooks = LoopState.Hooks()
    }

    /// Loop thread, before its first run: runs `Options.setUp` and lets go of it. When it throws,
    /// records the error and stops the thread (nothing can have been posted yet but by setUp
    /// itself, and that is discarded); `start()` then throws it. Returns whether the thread may
    /// serve work.
    func setUp() -> Bool {
        guard let setUp = loop.hooks.setUp else { return true }
        loop.hooks.setUp = nil
        do {
            try setUp()
            return true
        } catch {
            handshake.setUpError = error
            requestStop(.discard)
            return false
        }
    }

    /// What setUp threw, taken out of the core once the loop ended: an error that holds a
    /// `ThreadBound` of this thread (or its handle) would otherwise keep the core alive.
    func takeSetUpError() -> any Error {
        defer { handshake.setUpError = nil }
        return handshake.setUpError!
    }
}
