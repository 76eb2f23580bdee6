import CLongThreadsShims
import Foundation
@testable import LongThreads
import Testing

/// After it answers a caller on its own CPU, a loop thread parks: it sleeps on a futex of its own
/// for that caller's next request, not in CF (`WaitPolicy.parkBudget`). Where threads run is the
/// scheduler's choice, so these threads force the park (their `WaitPolicy`) for a minute, far longer than any wait here: whatever must end a
/// park early (a post, a stop, a new timer, descriptor source or observer) fails its bounded wait
/// if it does not, and so does a thread that parks when it must not.
@Suite("Parking after a reply")
struct ParkTests {
    static let minute: Int64 = 60_000_000_000

    /// A thread that parks for up to `nanoseconds` after every reply, on any CPU (and never
    /// lingers, which a caller on another CPU would otherwise get instead).
    static func parkingThread(_ name: String, nanoseconds: Int64 = minute) throws -> LongThread {
        try LongThread(name: name, waitPolicy: .forcing(linger: .never, park: WaitPolicy.forced(nanoseconds)))
    }

    /// Waits, for 10 s at most, until `thread`'s loop is parked (`parked`) or not.
    static func waitUntilParked(_ thread: LongThread, _ parked: Bool = true) -> Bool {
        let deadline = ContinuousClock.now + .seconds(10)
        while thread.core.shared.withLock({ $0.queue.consumerParked }) != parked {
            if ContinuousClock.now >= deadline { return false }
            usleep(100)
        }
        return true
    }

    @Test("after a reply the loop parks, and a post from another thread ends the park and runs")
    func postEndsAPark() throws {
        let thread = try Self.parkingThread("lt-park")
        defer { thread.stop() }
        for round in 0..<50 {
            try thread.sync {}
            #expect(Self.waitUntilParked(thread), "round \(round): the loop did not park after a reply")
            let ran = Latch()
            // From another thread, as the test thread's next post would be from the caller.
            let poster = Thread { try? thread.perform { ran.countDown() } }
            poster.start()
            // A post that did not ring the park's bell would wait out the minute.
            let didRun = ran.wait(timeout: .seconds(10))
            #expect(didRun, "round \(round): a post to a parked loop did not run")
            if !didRun { return }
        }
    }

    @Test("round trips through parks return every value, with posts from another thread among them")
    func roundTripsThroughParks() throws {
        let thread = try Self.parkingThread("lt-park-trips")
        defer { thread.stop() }
        let posted = 2_000
        let ran = Latch(count: posted)
        let poster = Thread {
            for _ in 0..<posted { try? thread.perform { ran.countDown() } }
        }
        poster.start()
        for value in 0..<2_000 {
            let got = try thread.sync { value }
            #expect(got == value)
            if got != value { return }
        }
        #expect(ran.wait(), "posts made while the loop parked between round trips were lost")
    }

    @Test("a stop ends a park at once", arguments: [LongThread.PendingWork.drain, .discard])
    func stopEndsAPark(pending: LongThread.PendingWork) throws {
        for round in 0..<10 {
            let thread = try Self.parkingThread("lt-park-stop")
            try thread.sync {}
            #expect(Self.waitUntilParked(thread), "round \(round): the loop did not park after a reply")
            let started = ContinuousClock.now
            thread.stop(pending: pending)
            let took = ContinuousClock.now - started
            #expect(took < .seconds(5), "round \(round): the stop waited \(took) for the park to end")
            if took >= .seconds(5) { return }
        }
    }

    @Test("a timer scheduled while the loop is parked fires on time")
    func timerScheduledDuringAParkFires() throws {
        let thread = try Self.parkingThread("lt-park-timer")
        defer { thread.stop() }
        try thread.sync {}
        #expect(Self.waitUntilParked(thread))
        let fired = Latch()
        try thread.perform(after: .milliseconds(20)) { fired.countDown() }
        #expect(fired.wait(timeout: .seconds(10)), "a timer waited for the park to end")
    }

    @Test("a park ends at the thread's next timer deadline")
    func parkEndsAtTheNextDeadline() throws {
        let thread = try Self.parkingThread("lt-park-deadline")
        defer { thread.stop() }
        let fired = Latch()
        // Pending before the reply: the park that follows must not outlast it.
        try thread.perform(after: .milliseconds(200)) { fired.countDown() }
        try thread.sync {}
        #expect(fired.wait(timeout: .seconds(10)), "a timer due during a park fired only after it")
    }

    /// A pipe whose reading end `thread` watches; `received` counts down once per byte read.
    static func watchedPipe(on thread: LongThread, received: Latch) throws -> (source: DescriptorSource, writer: Int32, close: () -> Void) {
        var fds: [Int32] = [0, 0]
        #expect(pipe(&fds) == 0)
        _ = fcntl(fds[0], F_SETFL, O_NONBLOCK)
        let reader = fds[0]
        let source = try thread.watch(reader, for: .readable) { _ in
            var byte: UInt8 = 0
            if read(reader, &byte, 1) == 1 { received.countDown() }
        }
        return (source, fds[1], { close(fds[0]); close(fds[1]) })
    }

    @Test("a thread with a descriptor source does not park: its events are handled after a reply")
    func noParkWithADescriptorSource() throws {
        let thread = try Self.parkingThread("lt-park-fd")
        defer { thread.stop() }
        for round in 0..<20 {
            let received = Latch()
            let pipe = try Self.watchedPipe(on: thread, received: received)
            defer { pipe.source.cancel(); pipe.close() }
            try thread.sync {}
            var byte: UInt8 = 1
            #expect(write(pipe.writer, &byte, 1) == 1)
            let handled = received.wait(timeout: .seconds(10))
            #expect(handled, "round \(round): a readable pipe waited for a park to end")
            if !handled { return }
        }
    }

    @Test("a descriptor source added while the loop is parked ends the park")
    func descriptorSourceEndsAPark() throws {
        let thread = try Self.parkingThread("lt-park-fd-later")
        defer { thread.stop() }
        try thread.sync {}
        #expect(Self.waitUntilParked(thread))
        let received = Latch()
        let pipe = try Self.watchedPipe(on: thread, received: received)
        defer { pipe.source.cancel(); pipe.close() }
        var byte: UInt8 = 1
        #expect(write(pipe.writer, &byte, 1) == 1)
        #expect(received.wait(timeout: .seconds(10)), "a readable pipe waited for a park to end")
    }

    @Test("an observer added while the loop is parked ends the park: it sees the loop go to sleep")
    func observerEndsAPark() throws {
        let thread = try Self.parkingThread("lt-park-observer")
        defer { thread.stop() }
        try thread.sync {}
        #expect(Self.waitUntilParked(thread))
        let sawSleep = Latch()
        let observer = try thread.addObserver(for: .beforeWaiting) { _ in sawSleep.countDown() }
        defer { observer.cancel() }
        // A parked loop never reaches CF's before-waiting callout until its park ends.
        #expect(sawSleep.wait(timeout: .seconds(10)), "an observer was added and the loop stayed parked")
    }

    @Test("a common mode added while the loop is parked rings it: `.common` work waiting may now run")
    func commonModeRingsAPark() throws {
        let thread = try Self.parkingThread("lt-park-mode")
        defer { thread.stop() }
        try thread.sync {}
        #expect(Self.waitUntilParked(thread))
        let rung = thread.core.waker.rings
        try thread.addCommonMode(RunLoop.Mode("lt-park-common"))
        #expect(thread.core.waker.rings != rung, "a common mode was added and the park's bell was not rung")
        #expect(Self.waitUntilParked(thread, false))
    }

    @Test("the first statistics read rings a parked loop: it begins counting wake-ups at once")
    func firstStatisticsReadRingsAPark() throws {
        let thread = try Self.parkingThread("lt-park-stats")
        defer { thread.stop() }
        try thread.sync {}
        #expect(Self.waitUntilParked(thread))
        let rung = thread.core.waker.rings
        _ = thread.statistics
        #expect(thread.core.waker.rings != rung, "the first statistics read left the park's bell unrung")
        #expect(Self.waitUntilParked(thread, false))
    }

    @Test("a park no post ends ends by itself, and the thread then sleeps without waking")
    func parkEndsByItself() throws {
        // The real bound: a tick.
        let thread = try Self.parkingThread("lt-park-ends", nanoseconds: WaitPolicy.machine.parkMost)
        defer { thread.stop() }
        let tid = try thread.kernelThreadID()
        #expect(waitUntil(timeout: .seconds(5)) { !thread.core.shared.withLock { $0.queue.consumerParked } && threadIsSleeping(tid) },
                "a park outlived its one-tick bound")
        let before = try #require(ProcessCensus.voluntarySwitches(ofThread: tid))
        // Measures an absence (no wake-ups), it does not wait for an event.
        usleep(100_000)
        let after = try #require(ProcessCensus.voluntarySwitches(ofThread: tid))
        #expect(after == before, "the thread woke \(after - before) times after its park ended")
    }

    @Test("the loop parks for a caller on its own CPU only, and stops parking while parks find no work")
    func parkBudget() throws {
        let policy = WaitPolicy.machine
        let (checks, _) = try SameCPUSpinTests.onOneCPU { cpu, other -> [(Bool, String)]? in
            let learning = WaitLearning.current
            SameCPUSpinTests.answerCaller(on: other)
            let forOther = policy.parkBudget(&learning.pointee)
            SameCPUSpinTests.answerCaller()
            let forHere = policy.parkBudget(&learning.pointee)
            // Parks that end without work: then only every 16th reply parks.
            for _ in 0..<32 { policy.parkEnded(won: false, after: policy.parkMost, &learning.pointee) }
            var parkedAfterLosses = 0
            for _ in 0..<32 {
                // Off this CPU the budget is 0 for another reason: try again.
                guard CLongThreadsShims_currentCPU() == cpu else { return nil }
                if policy.parkBudget(&learning.pointee) > 0 { parkedAfterLosses += 1 }
            }
            return [
                (forOther == 0, "parks \(forOther) ns for a caller on CPU \(other), not its own"),
                (forHere == policy.parkMost, "parks \(forHere) ns for a caller on its own CPU \(cpu), not a tick"),
                (parkedAfterLosses == 2, "\(parkedAfterLosses) of 32 replies parked after parks kept losing, not 2"),
            ]
        }
        WaitLearning.resetCurrent()
        for (passed, what) in checks { #expect(passed, "\(what)") }
    }
}

/// A linger spins for the whole wait; a park sleeps on a futex. A caller that comes back later
/// than a linger pays for (it computes between requests) gets a park, on any CPU (the benchmark's
/// whole cost: at 20 µs between computing requests, lingers cost 1.4× the best peer's CPU).
@Suite("Waits that pay for themselves")
struct PayingWaitTests {
    static let policy = WaitPolicy.forcing(spareCPU: true)

    @Test("a loop whose caller on another CPU comes back later than a linger pays for parks instead, and lingers again once it comes back soon")
    func lateCallerGetsAPark() throws {
        let policy = Self.policy
        let (checks, _) = try SameCPUSpinTests.onOneCPU { cpu, other -> [(Bool, String)]? in
            let learning = WaitLearning.current
            SameCPUSpinTests.answerCaller(on: other)
            let lingerAtFirst = policy.lingerBudget(&learning.pointee)
            let parkAtFirst = policy.parkBudget(&learning.pointee)
            // The caller computes 3 linger-worths between requests: the lingers win, late.
            let late = 3 * policy.lingerPaysUntil
            for _ in 0..<8 { policy.lingerWon(after: late, &learning.pointee) }
            let lingerWhenLate = policy.lingerBudget(&learning.pointee)
            let parkWhenLate = policy.parkBudget(&learning.pointee)
            // Back to back again: the parks win at once.
            for _ in 0..<16 { policy.parkEnded(won: true, after: 1_000, &learning.pointee) }
            let lingerWhenSoon = policy.lingerBudget(&learning.pointee)
            let parkWhenSoon = policy.parkBudget(&learning.pointee)
            guard CLongThreadsShims_currentCPU() == cpu else { return nil }
            return [
                (lingerAtFirst > 0 && parkAtFirst == 0, "a fresh loop: linger \(lingerAtFirst) ns, park \(parkAtFirst) ns"),
                (lingerWhenLate == 0, "lingers \(lingerWhenLate) ns for a caller back after \(late) ns"),
                (parkWhenLate == policy.parkMost, "parks \(parkWhenLate) ns for a caller back after \(late) ns, not a tick"),
                (lingerWhenSoon > 0 && parkWhenSoon == 0,
                 "a caller back at once again: linger \(lingerWhenSoon) ns, park \(parkWhenSoon) ns"),
            ]
        }
        WaitLearning.resetCurrent()
        for (passed, what) in checks { #expect(passed, "\(what)") }
    }

    @Test("round trips with a computing caller between them return every value, through parks on any CPU")
    func computingCallerRoundTrips() throws {
        let thread = try LongThread(name: "lt-pay", waitPolicy: Self.policy)
        defer { thread.stop() }
        for value in 0..<300 {
            LingerTests.spin(nanoseconds: 30_000)
            let got = try thread.sync { value }
            #expect(got == value)
            if got != value { return }
        }
        let ran = Latch()
        try thread.perform { ran.countDown() }
        #expect(ran.wait(timeout: .seconds(10)), "a post after the round trips never ran")
    }
}

extension StallMonitoring {
    /// A loop thread waiting for a caller's next request (a park, or a linger) is not running a
    /// callout: a monitor must not take the wait for the last item running on.
    @Suite("Stall monitor and a waiting loop", .serialized)
    struct WaitingLoopStallTests {
        /// How the loop waits for a caller's next request after each reply, for a second.
        enum Wait: String, CaseIterable, Sendable { case park, linger }

        @Test("a wait for the caller's next request is not reported as a stall, and a slow item after it still is",
              arguments: Wait.allCases)
        func waitIsNoStall(wait: Wait) throws {
            let reports = Recorder<StallMonitor.Report>()
            let reported = Latch()
            let monitor = try StallMonitor(threshold: .milliseconds(20)) { report in
                reports.record(report)
                reported.countDown()
            }
            // Waits for up to a second after each reply: fifty thresholds. (A linger spins: it
            // holds a CPU for the absence measured below, 0.2 s.)
            let second: Int64 = 1_000_000_000
            let thread = try LongThread(name: "lt-wait-stall", waitPolicy: .forcing(
                linger: wait == .linger ? .always(nanoseconds: second) : .never,
                park: wait == .park ? .always(nanoseconds: second) : .never))
            defer { thread.stop() }
            monitor.watch(thread)
            try thread.sync(label: "quick") {}
            if wait == .park { #expect(ParkTests.waitUntilParked(thread)) }
            // Measures an absence (no report), it does not wait for an event: 10 thresholds.
            usleep(200_000)
            #expect(reports.count == 0, "a loop waiting (\(wait)) was reported: \(reports.events.map(\.description))")
            // The wait ends with the next post; a slow one must still be caught, while it runs.
            let stillRunning = Recorder<Bool>()
            try thread.perform(label: "slow") { stillRunning.record(reported.wait(timeout: .seconds(10))) }
            try thread.sync {}
            #expect(stillRunning.events == [true])
            #expect(reports.events.map(\.label) == ["slow"])
        }
    }
}
