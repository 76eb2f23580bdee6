import Glibc

/// Descriptors the daemon holds back from clients, so that the process never sits at its
/// descriptor limit while code it does not control needs one.
///
/// Dispatch, under Swift concurrency's global executor (swift-service-lifecycle's tasks run
/// there), halts the process when it cannot open a descriptor: it reads each worker's
/// `/proc/<tid>/stat` once a second while a global queue holds work. The library's own calls
/// throw instead, but a run-loop mode new to a thread needs 2 and the library keeps 1 spare. So
/// the daemon accepts clients only while it holds ``count`` descriptors, and gives them back the
/// moment `accept` meets the limit: while it waits for a client to leave, that many are free.
/// `daemon.io` only.
struct DescriptorReserve: ~Copyable {
    /// Dispatch's one `/proc` read at a time, and a new mode's 2 with the library's spare.
    static let count = 4

    private var held: [Int32] = []

    /// Takes descriptors until ``count`` are held; whether they all are. `/dev/null` and
    /// duplicates of it, close-on-exec: slots only, never a socket kept listening.
    mutating func fill() -> Bool {
        while held.count < Self.count {
            let fd = held.first.map { fcntl($0, F_DUPFD_CLOEXEC, 0) } ?? open("/dev/null", O_RDONLY | O_CLOEXEC)
            if fd < 0 { return false }
            held.append(fd)
        }
        return true
    }

    /// Gives every held descriptor back.
    mutating func release() {
        for fd in held { close(fd) }
        held.removeAll(keepingCapacity: true)
    }

    deinit { for fd in held { close(fd) } }
}
