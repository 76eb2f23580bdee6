import Foundation
import LongThreads

/// Every item one cycle posted, and what became of it. "Lost" is exact: an accepted item must run
/// exactly once, or be dropped by a discarding stop (counted by the thread's statistics, and for a
/// waiting caller reported to it); anything else is lost.
final class Ledger: @unchecked Sendable {
    private let lock = NSLock()
    // Guarded by `lock`.
    private var runs: [UInt8] = []
    private var waitedOutcome: [Int: Bool] = [:] // id -> the waiter was told it ran
    private(set) var accepted = 0
    private(set) var refused = 0
    private(set) var waitersToldDiscarded = 0

    /// A new item id (before posting it).
    func newItem() -> Int {
        lock.withLock {
            runs.append(0)
            return runs.count - 1
        }
    }

    func ran(_ id: Int) { lock.withLock { runs[id] &+= 1 } }
    func acceptedItem() { lock.withLock { accepted += 1 } }
    func refusedItem() { lock.withLock { refused += 1 } }

    /// A waiting caller returned: `ran` when the work ran, false when it was told `.discarded`.
    func waited(_ id: Int, ran: Bool) {
        lock.withLock {
            accepted += 1
            waitedOutcome[id] = ran
            if !ran { waitersToldDiscarded += 1 }
        }
    }

    /// Items lost, given how many the thread says it discarded.
    func lost(discardedByThread: Int) -> (lost: Int, problems: [String]) {
        lock.withLock {
            var problems: [String] = []
            var ranOnce = 0
            for (id, count) in runs.enumerated() {
                if count == 1 { ranOnce += 1 }
                if count > 1 { problems.append("item \(id) ran \(count) times") }
            }
            for (id, told) in waitedOutcome where told != (runs[id] == 1) {
                problems.append("item \(id): its waiter was told ran=\(told), it ran \(runs[id]) times")
            }
            let lost = accepted - ranOnce - discardedByThread
            if lost != 0 { problems.append("\(accepted) accepted, \(ranOnce) ran once, \(discardedByThread) discarded") }
            return (max(lost, problems.isEmpty ? 0 : 1), problems)
        }
    }

    var tasksRun: Int { lock.withLock { runs.reduce(0) { $0 + Int($1) } } }
}

/// Reports an operation that does not finish within the hang timeout, then exits with status 2.
final class Watchdog: @unchecked Sendable {
    private let lock = NSLock()
    // Guarded by `lock`.
    private var current: [Int: (what: String, since: ContinuousClock.Instant)] = [:] // by runner
    private let timeout: Duration
    private let seed: UInt64

    init(timeout: Duration, seed: UInt64) {
        self.timeout = timeout
        self.seed = seed
        spawnDetached { [self] in watch() }
    }

    func begin(runner: Int, _ what: String) { lock.withLock { current[runner] = (what, .now) } }
    func end(runner: Int) { lock.withLock { current[runner] = nil } }

    private func watch() {
        while true {
            usleep(200_000) // the watchdog's own tick; a hang is minutes-scale, this is not a test wait
            let overdue = lock.withLock { () -> String? in
                let now = ContinuousClock.now
                return current.values.first { now - $0.since > timeout }?.what
            }
            if let overdue {
                let report = """
                HANG: \(overdue) did not finish within \(timeout)
                replay with: --seed \(seed)
                threads:
                \(Census.threadReport)

                """
                FileHandle.standardError.write(Data(report.utf8))
                exit(2)
            }
        }
    }
}

/// Starts a joinable pthread (the tool counts threads, so it uses no thread pool). Exits on failure.
func spawn(_ body: @escaping @Sendable () -> Void) -> pthread_t {
    final class Box { let body: @Sendable () -> Void; init(_ body: @escaping @Sendable () -> Void) { self.body = body } }
    var thread = pthread_t()
    let context = Unmanaged.passRetained(Box(body)).toOpaque()
    let rc = pthread_create(&thread, nil, { context in
        Unmanaged<Box>.fromOpaque(context!).takeRetainedValue().body()
        return nil
    }, context)
    if rc != 0 {
        FileHandle.standardError.write(Data("longthread-stress: pthread_create failed: \(rc)\n".utf8))
        exit(1)
    }
    return thread
}

func spawnDetached(_ body: @escaping @Sendable () -> Void) {
    pthread_detach(spawn(body))
}

func join(_ threads: [pthread_t]) {
    for thread in threads { pthread_join(thread, nil) }
}
