/// Floor 8: the least a thread's life can cost, `pthread_create` of an empty body and
/// `pthread_join`. Its "task" is the thread's body itself; it takes no work.
final class PthreadCreateFloor: Contender, @unchecked Sendable {
    static let name = "pthread_create (floor)"
    static let features: Features = []

    private let thread = PosixThread.spawn {}

    init() {}

    func post(_ work: @escaping @Sendable () -> Void) {
        fatalError("the pthread_create floor takes no work")
    }

    /// Nothing to do: the lifecycle figure's task is the thread's empty body.
    func roundTrip() {}

    func runOnWorker(_ body: @escaping @Sendable () -> Void) {
        fatalError("the pthread_create floor takes no work")
    }

    func stop(_ pending: Pending) {
        thread.join()
    }
}
