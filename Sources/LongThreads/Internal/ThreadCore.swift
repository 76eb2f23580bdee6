import CLongThreadsShims
import Foundation
import Glibc
import Synchronization

/// The state of one LongThread that its pthread runs on: the queue, the lifecycle, the engine.
///
/// `LongThread` is the handle users hold; this object is held by the handle and by the pthread, and
/// holds the handle only weakly, so dropping the last handle stops the thread (`handleReleased`).
/// The work path is in `ThreadCore+Work.swift` (the drain in `ThreadCore+Drain.swift`, its waits
/// for a caller's next request in `ThreadCore+Linger.swift`), the stop path in
/// `ThreadCore+Stop.swift`; state of its own concern lives in `StartHandshake`, `CalloutWatch`,
/// `DrainBatch` and `DrainPass`.
final class ThreadCore: @unchecked Sendable {
    // MARK: Immutable
    let name: String?
    let options: LongThread.Options
    /// See `init`.
    let settleInDelay: UInt64
    /// How long this thread's waits and its callers' waits for its replies stay awake.
    let waitPolicy: WaitPolicy
    /// Whether an owner was given: the loop then checks it each time it wakes.
    let watchesOwner: Bool
    /// Whether `Options.queueLimit` bounds the queue (then posts may be refused or wait).
    let hasQueueLimit: Bool
    let instrument: (any LongThreadInstrument)?
    /// Signalled by the pthread as its last act, after the loop released everything it held.
    let exited = OneShotEvent()
    /// This thread's key in its replies to blocked callers (`OneShotEvent.reply`): its address.
    /// A later thread whose core reuses the address inherits one stale same-CPU hint per caller:
    /// at most one spin skipped or one made in vain.
    var replierKey: UnsafeRawPointer { UnsafeRawPointer(Unmanaged.passUnretained(self).toOpaque()) }

    // MARK: The start: each side writes before the signal the other waits on (`StartHandshake`)
    /// The creator's wait for the loop to be ready, and what the start reports to it.
    var handshake = StartHandshake()

    // MARK: Written once before the pthread starts (pthread_create orders it before every read)
    /// The handle, for `LongThread.current`.
    weak var handle: LongThread?
    weak var owner: AnyObject?

    // MARK: Written by the loop thread, read by stall monitors (`CalloutWatch`)
    /// What stall monitors read of this thread (the running callout's start and label).
    let watch = CalloutWatch()

    // MARK: Guarded by `shared`
    let shared: Locked<SharedState>

    // MARK: Written under `shared`, read by the loop thread between two items without the lock
    /// The hints the drain looks at before each item, in one word so that an item costs one load
    /// for all of them (`Hints`). Bits are set and cleared with atomic bit operations.
    let hints: Atomic<UInt8>
    /// Bumped when the common set changes, so the loop thread drops its cached eligibility.
    let modesGeneration = Atomic<Int>(0)
    /// Items taken into `batch` and not yet run (published by the loop thread, for `statistics`).
    let batchWaiting = Atomic<Int>(0)
    /// When the oldest item still waiting in `batch` was posted (0: none, or posts are not timed).
    let batchOldestPostedAt = Atomic<UInt64>(0)

    // MARK: Loop thread only (`LoopState`, checked in debug builds)
    @exclusivity(unchecked) var loopStorage = LoopState()
    #if DEBUG
    /// The loop thread (`pthread_self`), once it began: `assertOnLoopThread`.
    let loopOwner = Atomic<UInt>(0)
    #endif

    /// Every way to wake the loop (CF's wake-up, the wake-up port, the park bell), rung by
    /// `withLockWaking` only. Declared last, so that the fields producers and the drain touch on
    /// every item keep the layout they had.
    let waker = Waker()
    /// LongThreadsTestKit's hold on the thread, nil but for its threads: the core calls it only
    /// through `ThreadCore+TestSeam.swift`, behind `Hints.harnessed`. After the waker, for the
    /// same reason.
    let testSeam: (any TestSeam)?

    struct SharedState {
        var lifecycle = Lifecycle()
        var queue = WorkQueue()
        var modes = ModeTable()
        /// The engine while the loop lives: producers wake it. Nil before the loop ran
        /// and after it exited (so nothing is ever added to the loop of an exited thread).
        var engine: RunLoopEngine?
        /// What the thread has done, as the loop thread last published it (`ThreadCounts`).
        var counts = ThreadCounts()
        /// Timers not yet fired or cancelled: a stop cancels them. Kept beside `timerSchedule`: a
        /// repeating timer whose callback runs is in neither the heap nor the due queue meanwhile.
        var timers: [ObjectIdentifier: LongThreadTimer] = [:]
        /// The same timers by deadline, for the engine's one CF timer (due ones wait there too).
        var timerSchedule = TimerSchedule()
        /// Observers and descriptor sources: the loop's exit cancels them.
        var attachments: [ObjectIdentifier: any LoopAttachment] = [:]
        /// Whether the loop counts its wake-ups: from the start with an owner or an instrument,
        /// otherwise once `statistics` was read (the loop then adds its observer at its next drain).
        var countsWakeUps = false
        /// Stoppers that changed the lifecycle and are still releasing what they took (discarded
        /// work, cancelled timers): the loop announces its end only once none is left.
        var stopsInFlight = 0
        /// Set by the loop thread when it waits for `stopsInFlight` to reach 0.
        var stopsReleased: OneShotEvent?
        /// Tasks awaiting the thread's end, resumed when it has left its loop (`lifecycle` exited).
        var exitWaiters: [CheckedContinuation<Void, Never>] = []
        /// The backlog and the producers waiting for room, with `Options.queueLimit` only.
        var backpressure: Backpressure?
        /// Work waiting for a deadline, by deadline and modes (`perform(at:)`, `run(at:)`).
        var deadlines: [DeadlineKey: DeadlineBucket] = [:]
        /// Made by the first caller that waits for another's `pthread_join`, signalled when it
        /// returned (most lives have one joiner: no event to allocate).
        var joinedEvent: OneShotEvent?
        /// Made by the thread's first observer (`observerTargets`).
        var observerTargets: ObserverTargets?
    }

    /// `settleInDelay`: how long the thread lives before its first callout settles it in
    /// (`settleIn`), in nanoseconds; `.max`: never. Tests choose either side of it, and may force
    /// the waits (`waitPolicy`).
    init(name: String?, owner: AnyObject?, options: LongThread.Options,
         settleInDelay: UInt64 = ThreadCore.settleInDelayNanoseconds, waitPolicy: WaitPolicy = .machine) {
        self.name = name
        self.settleInDelay = settleInDelay
        // setUp and tearDown are kept apart (`LoopState.hooks`) so that the thread can let them go.
        var options = options
        let hooks = LoopState.Hooks(setUp: options.setUp, tearDown: options.tearDown)
        options.setUp = nil
        options.tearDown = nil
        self.waitPolicy = waitPolicy
        self.options = options
        self.watchesOwner = owner != nil
        self.hasQueueLimit = options.queueLimit != nil
        self.owner = owner
        self.instrument = options.instrument
        // Tested once: each test of the optional existential copied and destroyed it.
        let instrumented = options.instrument != nil
        // Made in place: a local `var` was copied into the lock's storage and then destroyed.
        self.shared = Locked(SharedState(
            countsWakeUps: owner != nil || instrumented,
            backpressure: options.queueLimit.map(Backpressure.init)
        ))
        self.testSeam = options.harness
        self.hints = Atomic((instrumented ? Hints.instrumented : 0) | (testSeam == nil ? 0 : Hints.harnessed))
        testSeam?.attached(to: self)
        loop.hooks = hooks
    }

    // MARK: - Identity

    /// Thread-specific slot holding the core of the LongThread running on the calling thread.
    static let currentKey: pthread_key_t = {
        var key = pthread_key_t()
        let rc = pthread_key_create(&key, nil)
        precondition(rc == 0, "LongThreads: pthread_key_create failed with \(rc)")
        return key
    }()

    /// The core of the LongThread the caller runs on, if any.
    static var current: ThreadCore? {
        guard let pointer = pthread_getspecific(currentKey) else { return nil }
        return Unmanaged<ThreadCore>.fromOpaque(pointer).takeUnretainedValue()
    }

    var isCurrent: Bool {
        pthread_getspecific(Self.currentKey) == Unmanaged.passUnretained(self).toOpaque()
    }
}

/// The bits of `ThreadCore.hints`. Any bit set sends the drain down its slow path for the next item.
enum Hints {
    /// A discarding stop began: the drain stops at the next item (the lock decides what is
    /// discarded). Set once, under `shared`.
    static let discard: UInt8 = 1 << 0
    /// Urgent entries wait (`performAtFrontOfQueue`): the drain takes them before its next item.
    /// Set and cleared under `shared`.
    static let urgent: UInt8 = 1 << 1
    /// A stall monitor watches the thread: each item is a callout of its own, and posts are timed.
    /// Set and cleared under the `monitors` lock.
    static let monitored: UInt8 = 1 << 2
    /// The thread has an instrument (constant): posts are timed, and each item's wait measured.
    static let instrumented: UInt8 = 1 << 3
    /// Someone listens for how long posts wait: they read the clock.
    static let timesPosts: UInt8 = monitored | instrumented
    /// The loop lingered after a reply and nobody came: the next post reads the clock, so the
    /// loop learns how late its caller came back (`ThreadCore.linger`). Set and cleared by the
    /// loop thread.
    static let stampsNextPost: UInt8 = 1 << 4
    /// The thread belongs to LongThreadsTestKit (constant, `testSeam`): its drain waits at the
    /// seam's gate before each item and tells the seam when a pass ends, and its posts go the
    /// stamped way, where a refusal asked for is thrown.
    static let harnessed: UInt8 = 1 << 5
    /// A post reads the clock when any of these is set.
    static let stampsPosts: UInt8 = timesPosts | stampsNextPost | harnessed
}

extension ThreadCore {
    /// A discarding stop began (a hint: the lock decides what is discarded).
    var discardRequested: Bool { hints.load(ordering: .relaxed) & Hints.discard != 0 }
    /// Whether a stall monitor watches this thread (then a callout's start may have to wake it).
    var isMonitored: Bool { hints.load(ordering: .relaxed) & Hints.monitored != 0 }
    /// `instrument != nil`, without copying the existential.
    var hasInstrument: Bool { hints.load(ordering: .relaxed) & Hints.instrumented != 0 }
}

extension ThreadCore.SharedState {
    /// The mask for `modes`, registering each new mode with the loop (CF creates it then, which
    /// may throw `.outOfResources`). Only while the loop lives: the caller checked `engine`.
    mutating func mask(for modes: [RunLoop.Mode]) throws(LongThreadError) -> ModeTable.Mask {
        let engine = self.engine
        return try self.modes.mask(for: modes) { (name) throws(LongThreadError) in try engine?.add(modeNamed: name) }
    }

    /// The bit of one mode, registering it with the loop the first time (see `mask(for:)`).
    mutating func bit(for mode: RunLoop.Mode) throws(LongThreadError) -> ModeTable.Mask {
        let engine = self.engine
        return try self.modes.bit(for: mode) { (name) throws(LongThreadError) in try engine?.add(modeNamed: name) }
    }
}
