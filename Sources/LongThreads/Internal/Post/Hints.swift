import Synchronization

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
