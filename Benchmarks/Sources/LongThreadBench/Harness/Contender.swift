/// What a stop does with work that is queued but has not run.
enum Pending: Sendable {
    case drain, discard
}

/// What a contender can be measured on; the harness prints "n/a" for a figure it lacks.
struct Features: OptionSet, Sendable {
    let rawValue: Int
    /// `post` queues work without waiting (the async-throughput and stop-latency figures).
    static let post = Features(rawValue: 1 << 0)
    /// `roundTrip` runs a no-op on the worker and waits for it.
    static let roundTrip = Features(rawValue: 1 << 1)
    /// `stop(.discard)` drops queued work instead of running it.
    static let discard = Features(rawValue: 1 << 2)
    /// It owns one thread for its whole life, whose CPU time and wake-ups can be read.
    static let resident = Features(rawValue: 1 << 3)
    /// It can be created, left idle and stopped in numbers (the memory figure).
    static let idle = Features(rawValue: 1 << 4)

    static let all: Features = [.post, .roundTrip, .discard, .resident, .idle]
}

/// A worker the harness can drive without knowing what it is made of. Every contender is
/// created fresh for each repetition, used from the harness's threads, and stopped.
protocol Contender: AnyObject, Sendable {
    /// Column title in the table.
    static var name: String { get }
    static var features: Features { get }

    /// Starts the worker; returns once it can take work.
    init() throws

    /// Queues `work`; returns without waiting for it.
    func post(_ work: @escaping @Sendable () -> Void) throws

    /// Runs a no-op on the worker and returns once it has run: the contender's natural
    /// "sync" (LongThread.sync, submit().wait(), async + semaphore...).
    func roundTrip() throws

    /// Runs `body` on the worker thread and waits for it (pinning, reading the thread's id).
    func runOnWorker(_ body: @escaping @Sendable () -> Void) throws

    /// Ends the worker: runs or drops what is queued, then returns once its thread is joined.
    func stop(_ pending: Pending) throws
}

/// The closure every throughput and allocation figure posts: it captures nothing, so posting it
/// allocates no context and the figures show the queue's own cost.
let noWork: @Sendable () -> Void = {}

/// A queued closure, as the hand-written queues store it. Wrapping the closure in a struct keeps
/// it at its natural representation: an `Array<@Sendable () -> Void>` holds closures at the generic
/// (maximally abstract) representation, so each append would allocate a reabstraction thunk's
/// context, one malloc per item that no real queue needs to pay.
struct Job {
    let run: @Sendable () -> Void
}
