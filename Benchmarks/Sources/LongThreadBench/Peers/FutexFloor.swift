import CBenchSupport

/// Floor 7: the least a cross-thread round trip can cost. One 32-bit word, one FUTEX_WAKE each
/// way, no queue, no allocation; a single caller at a time.
final class FutexFloor: Contender, @unchecked Sendable {
    static let name = "futex (floor)"
    static let features: Features = [.roundTrip, .resident, .idle]

    private static let idle: UInt32 = 0, request: UInt32 = 1, done: UInt32 = 2, exit: UInt32 = 3

    private let word = UnsafeMutablePointer<UInt32>.allocate(capacity: 1)
    /// Handed over by the release store of `request` and read after the acquire load.
    private var body: (@Sendable () -> Void)?
    private var thread: PosixThread?  // set in init, read by stop

    init() {
        word.initialize(to: Self.idle)
        thread = PosixThread.spawn { [self] in serve() }
    }

    deinit {
        word.deallocate()
    }

    private func serve() {
        while true {
            let state = bench_load_acquire(word)
            switch state {
            case Self.request:
                body?()
                bench_store_release(word, Self.done)
                bench_futex_wake(word, 1)
            case Self.exit:
                return
            default:
                bench_futex_wait(word, state)  // returns at once if the word changed meanwhile
            }
        }
    }

    func post(_ work: @escaping @Sendable () -> Void) {
        fatalError("the futex floor has no queue")
    }

    func roundTrip() {
        handOver(nil)
    }

    func runOnWorker(_ body: @escaping @Sendable () -> Void) {
        handOver(body)
    }

    private func handOver(_ body: (@Sendable () -> Void)?) {
        self.body = body
        bench_store_release(word, Self.request)
        bench_futex_wake(word, 1)
        while true {
            let state = bench_load_acquire(word)
            if state != Self.request { break }
            bench_futex_wait(word, state)
        }
    }

    func stop(_ pending: Pending) {
        bench_store_release(word, Self.exit)
        bench_futex_wake(word, 1)
        thread?.join()
    }
}
