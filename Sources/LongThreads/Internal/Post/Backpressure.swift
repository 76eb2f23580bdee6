import Synchronization

/// The backlog of a thread with a `QueueLimit`, guarded by the thread's lock (`SharedState`).
///
/// `backlog` counts items accepted and not yet finished: `admit` adds one per post, the loop
/// thread subtracts what it finished each time it publishes its counters. The hysteresis flag
/// `isFull` follows NIO's `HighLowWatermark`: set by the admission that brings the backlog to the
/// high watermark, cleared once the backlog is below the low one; clearing it wakes every
/// producer waiting for room. Invariant: while `isFull`, `backlog >= lowWatermark >= 1`, so a
/// waiter is always woken by a later `finished` (or by a stop).
struct Backpressure {
    let limit: LongThread.QueueLimit
    private(set) var backlog = 0
    private(set) var isFull = false
    private var waiters: [UInt64: RoomWaiter] = [:]

    init(_ limit: LongThread.QueueLimit) {
        // Clamped again: the watermarks are settable after `QueueLimit.init` clamped them, and a
        // low watermark of 0 would never open the queue again.
        self.limit = .init(highWatermark: limit.highWatermark, lowWatermark: limit.lowWatermark, whenFull: limit.whenFull)
    }

    /// Counts one more item, or throws `.queueFull` when the queue is full and `refusable`.
    @inline(__always)
    mutating func admit(refusable: Bool) throws(LongThreadError) {
        if refusable, isFull { throw .queueFull }
        backlog += 1
        if backlog >= limit.highWatermark { isFull = true }
    }

    /// The loop thread finished `count` items.
    mutating func finished(_ count: Int) {
        backlog = max(0, backlog - count)
        if isFull, backlog < limit.lowWatermark {
            isFull = false
            wakeAll()
        }
    }

    mutating func add(_ waiter: RoomWaiter, id: UInt64) {
        waiters[id] = waiter
    }

    mutating func remove(_ id: UInt64) -> RoomWaiter? {
        waiters.removeValue(forKey: id)
    }

    /// Wakes every waiter (room, or a stop): each looks again. Under the thread's lock: resuming a
    /// continuation only schedules its task, and signalling an event is one futex wake.
    mutating func wakeAll() {
        guard !waiters.isEmpty else { return }
        for waiter in waiters.values { waiter.resume() }
        waiters = [:]
    }
}

/// A producer waiting for room: a blocked thread or a suspended task.
enum RoomWaiter {
    case thread(OneShotEvent)
    case task(CheckedContinuation<Void, Never>)

    func resume() {
        switch self {
        case .thread(let event): event.signal()
        case .task(let continuation): continuation.resume()
        }
    }

    private static let lastID = Atomic<UInt64>(0)

    static func makeID() -> UInt64 {
        lastID.add(1, ordering: .relaxed).newValue
    }
}

extension ThreadCore {
    /// Any thread but the loop's: blocks while the queue is full and the thread accepts work.
    /// The caller then posts again (and gets `.stopped` if a stop woke it).
    func waitForRoom() {
        let event: OneShotEvent? = shared.withLock { state in
            guard state.lifecycle.acceptsWork, state.backpressure?.isFull == true else { return nil }
            let event = OneShotEvent()
            state.backpressure?.add(.thread(event), id: RoomWaiter.makeID())
            return event
        }
        event?.wait()
    }

    /// Any task: suspends while the queue is full and the thread accepts work.
    /// - Throws: `CancellationError` if the task is cancelled before there is room.
    func roomAvailable() async throws {
        let id = RoomWaiter.makeID()
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let waits = shared.withLock { state -> Bool in
                    guard state.lifecycle.acceptsWork, state.backpressure?.isFull == true else { return false }
                    state.backpressure?.add(.task(continuation), id: id)
                    return true
                }
                if !waits {
                    continuation.resume()
                } else if Task.isCancelled {
                    // Cancelled before it was registered: the handler found nothing to resume.
                    removeRoomWaiter(id)?.resume()
                }
            }
        } onCancel: {
            removeRoomWaiter(id)?.resume()
        }
        try Task.checkCancellation()
    }

    private func removeRoomWaiter(_ id: UInt64) -> RoomWaiter? {
        shared.withLock { $0.backpressure?.remove(id) }
    }

    /// Posts through `post`, waiting for room and posting again while the queue is full, when the
    /// thread's policy is to block (never on the thread itself). Without a queue limit, `post` once.
    @inline(__always)
    func postWaitingForRoom(_ post: () throws(LongThreadError) -> Void) throws(LongThreadError) {
        guard hasQueueLimit else { return try post() }
        try postRetryingWhileFull(post)
    }

    @inline(never)
    private func postRetryingWhileFull(_ post: () throws(LongThreadError) -> Void) throws(LongThreadError) {
        while true {
            do throws(LongThreadError) {
                return try post()
            } catch .queueFull where options.queueLimit?.whenFull == .block && !isCurrent {
                waitForRoom()
            }
        }
    }
}
