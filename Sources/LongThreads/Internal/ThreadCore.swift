import CLongThreadsShims
import Foundation
import Glibc
import Synchronization

/// One LongThread's machinery: held by the handle users hold (`LongThread`) and by the pthread,
/// holding the handle only weakly, so dropping the last handle stops the thread (`handleReleased`).
///
/// Its state has three owners, and each field's type or mark says which:
/// - **The post side** (`Internal/Post`): any thread, under the thread's lock. `shared` holds the
///   queue, the modes, the engine while the loop lives, the timers and attachments. `hints` are
///   read by the loop between items without it (each bit's writer is named in `Hints`). A post
///   is `enqueue` (`ThreadCore+Post.swift`); the loop is woken through `withLockWaking` only (a
///   stop also ends the loop's run in CF: `RunLoopEngine.stopRun`).
/// - **The loop side** (`Internal/Loop`): the loop thread only, through `loop` (`LoopState`, each
///   access checked in debug builds). The run (`ThreadCore+Loop.swift`), the drain and its waits
///   (`ThreadCore+Drain.swift`, one callout as a `DrainPass`), callouts, timers. What it
///   publishes for other threads is atomic (`batchWaiting`, `batchOldestPostedAt`) or shared
///   with the stall monitors (`watch`).
/// - **The life side** (`Internal/Life`): `Lifecycle` (under the lock) decides, returning actions;
///   the start (`ThreadCore+Start.swift`, `handshake`) and the stop and join
///   (`ThreadCore+Stop.swift`, `exited`) carry them out.
/// The engine (`Engine/`) is the only CoreFoundation code; the test kit enters through
/// `Internal/Testing` only.
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

    // MARK: Life side: the start (each side writes before the signal the other waits on)
    /// The creator's wait for the loop to be ready, and what the start reports to it.
    var handshake = StartHandshake()

    // MARK: Life side: written once before the pthread starts (pthread_create orders it before every read)
    /// The handle, for `LongThread.current`.
    weak var handle: LongThread?
    weak var owner: AnyObject?

    // MARK: Stall side: shared with stall monitors (`CalloutWatch`)
    /// What stall monitors read of this thread and ask of it: the loop thread writes the running
    /// callout's start and label; the monitors their list, threshold and stack-sample request.
    let watch = CalloutWatch()

    // MARK: Post side: guarded by `shared` (`SharedState`)
    let shared: Locked<SharedState>

    // MARK: Post side: read by the loop thread between two items without the lock
    /// The hints the drain looks at before each item, in one word so that an item costs one load
    /// for all of them (`Hints`). Bits are set and cleared with atomic bit operations.
    let hints: Atomic<UInt8>
    /// Bumped after the common set changed under `shared` (a release), so the loop thread drops
    /// its cached eligibility at its next drain (an acquire).
    let modesGeneration = Atomic<Int>(0)

    // MARK: Loop side, published: written by the loop thread, read by any (`statistics`, monitors)
    /// Items taken into `batch` and not yet run (published by the loop thread, for `statistics`).
    let batchWaiting = Atomic<Int>(0)
    /// When the oldest item still waiting in `batch` was posted (0: none, or posts are not timed).
    let batchOldestPostedAt = Atomic<UInt64>(0)

    // MARK: Loop side: the loop thread only (`loop`, checked in debug builds)
    @exclusivity(unchecked) var loopStorage = LoopState()
    #if DEBUG
    /// The loop thread (`pthread_self`), once it began: `assertOnLoopThread`.
    let loopOwner = Atomic<UInt>(0)
    #endif

    // MARK: Post side: immutable
    /// Every way to wake the loop (CF's wake-up, the wake-up port, the park bell), rung by
    /// `withLockWaking` only. Declared after the fields producers and the drain touch on every
    /// item, so that those share the object's first cache lines.
    let waker = Waker()
    /// LongThreadsTestKit's hold on the thread, nil but for its threads: the core calls it only
    /// through `ThreadCore+TestSeam.swift`, behind `Hints.harnessed` (its clock is read unflagged,
    /// wherever the thread reads its time: `clockNanoseconds`). After the waker, for the same
    /// reason.
    let testSeam: (any TestSeam)?

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
        // Tested once: each test of the optional existential copies and destroys it.
        let instrumented = options.instrument != nil
        // Made in place: a local `var` would be copied into the lock's storage, then destroyed.
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
