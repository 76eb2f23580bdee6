import CLongThreadsShims

/// Every rule for how long a thread waits awake before it sleeps: a caller's spin for a reply, a
/// joiner's spin for a thread's end, a loop thread's linger (spin) or park (futex sleep) for its
/// caller's next request. Each constant is here with its reason; what depends on the machine is
/// derived from it (`machine`). What each thread learnt is its `WaitLearning`; C keeps only the
/// mechanics (the futex, the spin loops, the CPU read from the rseq area).
///
/// A thread holds its policy (`ThreadCore.waitPolicy`), and a caller waits for a reply under the
/// policy of the thread it called; tests give a thread one that forces a wait or the load.
///
/// **Why wait awake.** A reply from a LongThread that is awake arrives within a few microseconds;
/// sleeping on the futex instead costs a system call on each side plus a scheduler wake-up of the
/// sleeper (tens of microseconds across CPUs on a VM). So a caller expecting a reply spins first,
/// and a loop thread that just answered a caller looks for its next request a little while
/// (a linger) before it sleeps in CF, but each only while it can win, like the kernel's adaptive
/// mutexes, which spin only while the owner is on a CPU. Never `sched_yield`: on a busy CPU it
/// gives a CPU-bound neighbour a whole slice (a 4 ms tick measured).
///
/// **Same CPU.** A spin or a linger wins only if the thread it waits for runs meanwhile on another
/// CPU. When caller and loop thread share a CPU (the scheduler puts a ping-pong pair together even
/// with another CPU idle), the one spinning holds the CPU the other needs. So a reply carries the
/// replier's CPU to the caller, and the caller's CPU (noted when it made the event) to the
/// replier's next linger; each skips its spin while they match. A hint, as the kernel's "owner on
/// a CPU" is: either may move right after; a wrong guess costs one spin or one wake-up. The
/// caller keeps the last reply's CPU with its replier's key, so one LongThread's CPU is never
/// applied to another.
///
/// **Spare CPU.** With no spare CPU the awaited thread is runnable but queued behind others, and a
/// spinner only keeps it (or a neighbour) off a CPU. Spare: the system's runnable threads
/// (`RunnableThreads`) do not outnumber the CPUs the thread may run on (its affinity mask; one
/// CPU: never, as the awaited thread can only run when the spinner stops).
///
/// **The load signal's cost.** A sample is a /proc read (about 12 µs of CPU on a 2-vCPU VM), so it
/// is taken only where a wait's decision uses it (a reply spin, a linger, a join spin; never for a
/// thread on the waiter's CPU, nor for a loop whose caller comes back late), and at most once per
/// `loadSampleDecisions` such decisions of the thread and once per `loadSampleInterval`: charged to
/// many requests, not to each. At a millisecond between requests, a 2 ms age alone cost a caller
/// 6 µs a round trip (half a sample each). A stale signal costs little: a spin it wrongly allows
/// loses, and losing spins sit themselves out (`learntBudget`).
///
/// **Under load**, a wait still spins while the awaited thread is on another CPU right now: a
/// caller whose post found the loop draining (it needed no wake-up) spins up to
/// `loadedReplySpinMost`; a loop that answered a caller on another CPU lingers up to
/// `loadedLingerMost` (the futex wake puts the caller back within microseconds, and its next post
/// finds the loop awake). Measured with two CPU-bound threads beside a caller: round trips whose
/// threads ran on different CPUs took 1.1-2.7 µs at the median, against 25 µs when both slept.
///
/// **Paying for itself.** A wait is judged by the CPU of both threads, not the caller's latency
/// alone. A caller's spin for a reply its post had to wake the loop for (the loop parked or slept
/// in CF) lasts at most `wokenReplySpinMost`, what sleeping costs the caller, and learns apart
/// from spins for an awake loop's reply (`WaitLearning.wokenReplies`): a loop's wake-up takes tens
/// of µs across CPUs on a VM, and a spin that outlasts the caller's own sleep and wake has spent
/// more than winning saves. A linger spins: it costs the loop thread the whole wait. A park sleeps on a futex: it
/// costs a system call on each side whatever the wait, and saves the loop's sleep and wake in CF
/// (an eventfd write, a ppoll, an epoll_wait, a read and a pass of CF's). So the loop thread
/// learns how long its callers take to post again after a reply (`WaitLearning.callerGap`, from
/// every linger and park): a caller that computes between requests comes back later than a
/// linger can pay for (`lingerPaysUntil`), and the loop then parks instead, on any CPU.
///
/// **Learning.** A spin lasts three times the recent waits that won (a moving average: a reply a
/// little slower than usual is still caught), at least `spinLeast`, at most its cap; while fewer
/// than a quarter of recent waits won, only every `probeInterval`-th goes on (`WaitHistory`).
struct WaitPolicy: Sendable {
    /// How a test forces a wait: decided by the rules (`learnt`), always for so many ns, or never.
    enum Forced: Sendable, Equatable {
        case learnt
        case always(nanoseconds: Int64)
        case never
    }

    // MARK: Constants

    /// The first spins' moving average before any won: their budget is then three times it.
    static let initialSpinAverage: Int64 = 4_000
    /// The join's: a thread's end takes tens of microseconds (CF's teardown, the exit).
    static let initialJoinAverage: Int64 = 20_000

    /// A reply spin's cap with a spare CPU: a round trip to an awake loop takes a few µs; a reply
    /// behind more work than this is not worth spinning for (the futex's cost is small beside it).
    var replySpinMost: Int64 = 15_000
    /// Its cap under load (a spinner there holds a CPU someone queued for).
    var loadedReplySpinMost: Int64 = 10_000
    /// Its cap, spare CPU or not, when the post had to wake the loop thread: about what the
    /// caller's own futex sleep and wake cost it (a system call each way and a switch, 4-5 µs on a
    /// VM: the futex floor's same-CPU round trip, 4.7 µs). Spinning longer than blocking costs can
    /// only lose (the classic rule for spin-then-block waits); the reply of a parked loop on
    /// another CPU came in 20-100 µs (the paced rows of the whole-cost benchmark).
    var wokenReplySpinMost: Int64 = 5_000
    /// No spin shorter: the clock is read only every 32 pauses, and a reply needs a few µs.
    var spinLeast: Int64 = 4_000
    /// A linger's cap with a spare CPU: a caller that slept on its futex takes tens of µs to come
    /// back on a VM, and a linger that outlasts that wake-up keeps both threads awake after.
    var lingerMost: Int64 = 80_000
    /// Its cap under load.
    var loadedLingerMost: Int64 = 20_000
    /// The longest caller gap a linger is worth: a linger that wins after this long has spun
    /// longer than a park's futex wait and wake (a system call on each side, and the caller's
    /// spin for the reply, which a woken loop thread makes lose) cost both threads. Past it, the
    /// loop parks. About the CPU of one sleep and wake on a VM (2-5 µs each side), measured by
    /// the whole-cost benchmark: at 20 µs between computing requests a linger cost 1.4× the best
    /// peer's CPU.
    var lingerPaysUntil: Int64 = 10_000
    /// The join spin's floor and cap: a thread's end (CF's teardown, the exit) takes tens of µs
    /// after the stop reaches it, about what a sleeping joiner's wake-up costs.
    var joinSpinLeast: Int64 = 20_000
    var joinSpinMost: Int64 = 100_000
    /// A park's length: one scheduler tick (`machine`). A timed futex wait whose expiry comes
    /// before the CPU's next tick reprograms the timer hardware, on arming and again on an early
    /// wake (on a VM each is a hypervisor exit: a 10 µs park made 40-60% of pinned round trips
    /// take 11 µs instead of 4.7); a tick is never the earliest expiry while the CPU is busy.
    var parkMost: Int64 = 4_000_000
    /// The load signal's sampling: the one place its rate is set (see "The load signal's cost").
    /// `loadSampleInterval`: the youngest sample worth replacing, one scheduler tick (`machine`).
    /// /proc/loadavg's "running" field is read out at the instant of the read (nr_running summed
    /// over the CPUs), so the kernel sets no period to its changes; what it stands for here, a
    /// CPU-bound neighbour holding a CPU, changes at a tick at the finest (the scheduler preempts
    /// one at a tick), so two readings within a tick see the same competitors.
    var loadSampleInterval: Int64 = 4_000_000
    /// `loadSampleDecisions`: the fewest waits that use the signal between two samples of one
    /// thread. 32: a sample (12 µs) then costs each decision under 0.4 µs, a tenth of what the
    /// cheapest spin it decides wins (a futex sleep and wake, 4-5 µs), however far apart the
    /// requests; back to back (a few µs each) the tick bounds it instead.
    var loadSampleDecisions: UInt32 = 32
    /// While a kind of wait keeps losing, every this-many-th still goes on, to notice a change.
    var probeInterval: UInt32 = 16

    // MARK: Forced (tests)

    /// Forces the spare-CPU signal for every wait under this policy (nil: sampled).
    var spareCPU: Bool?
    /// Forces the loop thread's linger after a reply.
    var linger = Forced.learnt
    /// Forces the loop thread's park after a reply (when it does not linger).
    var park = Forced.learnt

    /// The policy for this machine: the park lasts one scheduler tick, read from the coarse
    /// clock's resolution (the jiffy, 1/HZ: 4 ms at HZ=250, 1 ms at 1000). Not `_SC_CLK_TCK`,
    /// which is USER_HZ (100 whatever HZ is).
    static let machine: WaitPolicy = {
        var policy = WaitPolicy()
        let tick = CLongThreadsShims_coarseClockResolution()
        // A tickless or odd clock: keep the 4 ms of HZ=250, the common server setting.
        if tick >= 1_000_000, tick <= 10_000_000 { (policy.parkMost, policy.loadSampleInterval) = (tick, tick) }
        return policy
    }()
}

// MARK: - Rules

extension WaitPolicy {
    /// Whether a CPU is spare for the calling thread, from its sample: called by a wait whose
    /// decision uses it, it counts one decision; taken again after `loadSampleDecisions` of them
    /// once the sample is `loadSampleInterval` old (a thread's first, at once).
    func spareCPUNow(_ now: Int64, _ learning: inout WaitLearning) -> Bool {
        if let spareCPU { return spareCPU }
        learning.load.decisions &+= 1
        let due = learning.load.decisions >= loadSampleDecisions && now - learning.load.sampledAt >= loadSampleInterval
        if due || learning.load.sampledAt == LoadSample.never {
            let usable = Int(CLongThreadsShims_usableCPUCount())
            let runnable = usable > 1 ? RunnableThreads.sample(now: now, maximumAge: loadSampleInterval) : -1
            learning.load = LoadSample(sampledAt: now, spareCPU: usable > 1 && runnable >= 0 && runnable <= usable)
        }
        return learning.load.spareCPU
    }

    /// How long to wait awake, from what this kind of wait learnt, at most `most`: 0 while it
    /// sits out (it keeps losing, and this is no probe).
    func learntBudget(_ history: inout WaitHistory, most: Int64) -> Int64 {
        if history.sitsOut(probeInterval: probeInterval) { return 0 }
        return min(max(3 * history.average, spinLeast), most)
    }

    /// Caller: how long to spin for a reply from `replier` before sleeping. 0 when it last replied
    /// from this CPU; with no spare CPU, 0 unless the post found it draining (`replierAwake`); when
    /// the post had to wake it, at most `wokenReplySpinMost`, learnt apart.
    func replySpinBudget(from replier: UnsafeRawPointer?, replierAwake: Bool, now: Int64,
                         _ learning: inout WaitLearning) -> Int64 {
        if learning.replierSharesCPU(replier) { return 0 }
        let spare = spareCPUNow(now, &learning)
        if !replierAwake { return spare ? learntBudget(&learning.wokenReplies, most: wokenReplySpinMost) : 0 }
        return learntBudget(&learning.replies, most: spare ? replySpinMost : loadedReplySpinMost)
    }

    /// Caller: a reply spin ended after `waited` ns, with the reply (`won`) or without; the post
    /// had found the loop thread awake or not (`replierAwake`).
    func replySpinEnded(won: Bool, after waited: Int64, replierAwake: Bool, _ learning: inout WaitLearning) {
        if replierAwake {
            learning.replies.record(won: won, waited: waited)
        } else {
            learning.wokenReplies.record(won: won, waited: waited)
        }
    }

    /// Joiner: how long to spin for the end of the thread with key `replier` before sleeping in
    /// `pthread_join`: under the reply spin's rules, with a spare CPU only, at least `joinSpinLeast`.
    func joinSpinBudget(for replier: UnsafeRawPointer?, now: Int64, _ learning: inout WaitLearning) -> Int64 {
        // An ending thread on the joiner's CPU needs that CPU to end.
        if learning.replierSharesCPU(replier) || !spareCPUNow(now, &learning) { return 0 }
        let budget = learntBudget(&learning.joins, most: joinSpinMost)
        return budget > 0 ? max(budget, joinSpinLeast) : 0
    }

    /// Loop thread, after it answered a blocked caller and found no work: how long to linger
    /// (look for that caller's next request, awake) before sleeping. 0 when the caller was on
    /// this CPU (it needs the CPU to post again) or recent lingers lost; shorter under load.
    func lingerBudget(_ learning: inout WaitLearning) -> Int64 {
        switch linger {
        case .always(let nanoseconds): return nanoseconds
        case .never: return 0
        case .learnt: break
        }
        if learning.waiterSharesCPU || callerComesBackLate(learning) { return 0 }
        let spare = spareCPUNow(Int64(CLongThreadsShims_monotonicNanoseconds()), &learning)
        return learntBudget(&learning.lingers, most: spare ? lingerMost : loadedLingerMost)
    }

    /// Loop thread: its callers have lately come back later than a linger pays for (a park costs
    /// both threads less).
    func callerComesBackLate(_ learning: WaitLearning) -> Bool {
        learning.callerGap > lingerPaysUntil
    }

    /// Loop thread: a caller posted again `gap` ns after a reply (at most a park's length: longer
    /// is simply late). A quarter each: a change of pace is seen within a few round trips.
    func learnCallerGap(_ gap: Int64, _ learning: inout WaitLearning) {
        learning.callerGap += (min(max(gap, 0), parkMost) - learning.callerGap) / 4
    }

    /// Loop thread: a linger found work after `waited` ns.
    func lingerWon(after waited: Int64, _ learning: inout WaitLearning) {
        learning.lingers.record(won: true, waited: waited)
        learnCallerGap(waited, &learning)
    }

    /// Loop thread: after a linger that found no work, the next request came `late` ns after the
    /// linger began. Within what a linger may last, the caller only woke slowly (it slept on its
    /// futex): not a loss but a budget too short, learnt fast; later, a loss.
    func lingerMissed(late: Int64, _ learning: inout WaitLearning) {
        learnCallerGap(late, &learning)
        if late > lingerMost {
            learning.lingers.record(won: false, waited: 0)
        } else {
            learning.lingers.average += (late - learning.lingers.average) / 2
        }
    }

    /// Loop thread, after it answered a caller on its own CPU and found no work: how long at most
    /// to sleep on its park bell (a futex of its own: the caller's next post rings it, and the loop
    /// runs that request in the same callout, with no pass of CF's) before sleeping in CF. A caller
    /// that shares the CPU cannot be lingered for; when it did not take the CPU at the reply's wake
    /// (a CPU-bound neighbour shares it), a sleep in CF cost about seven system calls per round
    /// trip (7.0 µs against Dispatch's 4.7), the park one futex wake. A caller on another CPU
    /// gets a park too when it comes back later than a linger pays for (`callerComesBackLate`).
    /// 0 when the caller was on another CPU and comes back soon (a linger's case), or recent parks
    /// found no work (but for probes).
    func parkBudget(_ learning: inout WaitLearning) -> Int64 {
        switch park {
        case .always(let nanoseconds): return nanoseconds
        case .never: return 0
        case .learnt: break
        }
        if !learning.waiterSharesCPU && !callerComesBackLate(learning) { return 0 }
        return learning.parks.sitsOut(probeInterval: probeInterval) ? 0 : parkMost
    }

    /// Loop thread: a park ended after `waited` ns, with work (`won`) or without.
    func parkEnded(won: Bool, after waited: Int64, _ learning: inout WaitLearning) {
        learning.parks.record(won: won, waited: waited)
        learnCallerGap(won ? waited : parkMost, &learning)
    }
}
