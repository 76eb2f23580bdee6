import CLongThreadsShims

/// A counter a thread sleeps on until it changes (a futex).
final class Doorbell: @unchecked Sendable {
    private let storage: UnsafeMutablePointer<CLongThreadsShims_Doorbell>

    init() {
        storage = .allocate(capacity: 1)
        storage.initialize(to: CLongThreadsShims_Doorbell(value: 0))
    }

    deinit { storage.deallocate() }

    var value: UInt32 { CLongThreadsShims_doorbellValue(storage) }
    func ring() { CLongThreadsShims_doorbellRing(storage) }
    func wait(seen: UInt32, timeoutNanoseconds: Int64) {
        CLongThreadsShims_doorbellWait(storage, seen, timeoutNanoseconds)
    }
}
