import Foundation
import LongThreads
import Testing

@Suite("Teardown: the last reference and the owner")
struct TeardownTests {
    @Test("dropping the last reference stops the thread, drains it, and waits for its end")
    func lastReferenceOnAnotherThread() throws {
        var thread: LongThread? = try LongThread(name: "lt-drop")
        let tid = try thread!.kernelThreadID()
        let ran = Counter()
        let gate = Latch()
        try thread!.perform { gate.wait() }
        for _ in 0..<50 { try thread!.perform { ran.increment() } }
        gate.countDown()
        weak let loop = try thread!.sync { RunLoop.current }
        thread = nil
        #expect(ran.value == 50)
        #expect(loop == nil) // deinit waited for the thread's exit
        #expect(ProcessCensus.threadGone(tid))
    }

    @Test("the last reference dropped by a task on the thread itself: no wait, and the thread still ends")
    func lastReferenceOnTheThread() throws {
        let holder = Holder()
        holder.thread = try LongThread(name: "lt-self-drop")
        let tid = try holder.thread!.kernelThreadID()
        let deinitReturned = Latch()
        let handleGone = Recorder<Bool>()
        let posted = Latch()
        try holder.thread!.perform { [holder] in
            posted.wait() // until the poster's temporary reference is gone
            holder.thread = nil // the last strong reference: deinit runs here, on the thread
            handleGone.record(LongThread.current == nil)
            deinitReturned.countDown()
        }
        posted.countDown()
        #expect(deinitReturned.wait())
        #expect(ProcessCensus.threadGone(tid))
        #expect(handleGone.events == [true])
    }

    @Test("the last reference released by CF's thread-exit finaliser does not make the thread join itself")
    func lastReferenceReleasedAtThreadExit() throws {
        let holder = Holder()
        holder.thread = try LongThread(name: "lt-tsd-drop")
        let tid = try holder.thread!.kernelThreadID()
        let posted = Latch()
        try holder.thread!.perform { [holder] in
            posted.wait()
            // A block for a mode the loop never runs: CF frees it when the thread exits, after the
            // thread's own bookkeeping ended; it holds the last reference.
            let last = holder.thread!
            holder.thread = nil
            RunLoop.current.perform(inModes: [RunLoop.Mode("never")]) { _ = last }
            last.stop(waitUntilDone: false)
        }
        posted.countDown()
        #expect(ProcessCensus.threadGone(tid))
    }

    @Test("a thread whose owner is gone exits the next time its loop wakes")
    func ownerDeallocated() throws {
        var owner: Tracked? = Tracked()
        let thread = try LongThread(name: "lt-owner", owner: owner)
        let tid = try thread.kernelThreadID()
        #expect(waitUntil { loopIsAsleep(tid) }) // the pass that ran the sync has ended
        owner = nil
        #expect(thread.isRunning) // nothing woke the loop yet
        try thread.perform {} // wakes it: the owner check ends the loop after this item
        #expect(thread.waitUntilExit(timeout: .seconds(10)))
        #expect(!thread.isRunning)
        #expect(throws: LongThreadError.stopped) { try thread.perform {} }
    }

    @Test("an owner that holds its thread ends it promptly when it goes")
    func ownerHoldsThread() throws {
        final class Owner {
            var thread: LongThread?
        }
        var owner: Owner? = Owner()
        owner!.thread = try LongThread(name: "lt-owner-holds", owner: owner)
        let tid = try owner!.thread!.kernelThreadID()
        weak let loop = try owner!.thread!.sync { RunLoop.current }
        owner = nil
        #expect(loop == nil)
        #expect(ProcessCensus.threadGone(tid))
    }
}

final class Holder: @unchecked Sendable {
    var thread: LongThread?
}
