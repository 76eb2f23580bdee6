import CLongThreadsShims
import Glibc

/// Keeps CoreFoundation from meeting the descriptor limit.
///
/// CF takes descriptors when it makes a thread's run loop (3: its wake-up eventfd, and the
/// default mode's epoll set and timer eventfd) and each new mode (2); the first loop a process
/// asks for comes with the main thread's (3 more: `ProcessSetUp` makes that one first, through
/// this check, on the creating thread). CF has no error path when
/// the kernel refuses: it halts the process (`__CFRunLoopCopyMode` → `HALT`). So before every call
/// that can make CF create a loop or a mode, the library makes sure the descriptors CF will need
/// are free — it sees enough closed numbers below the limit, or takes that many itself and gives
/// them back — and only then calls CF, or throws `EMFILE` without calling it.
///
/// Why this is sound for the library's own threads: each such call happens under `lock`, so no
/// other LongThread allocation can take the slots between the check and CF's use of them, and
/// descriptors are numbered lowest-free-first, so CF gets the slots seen free or lower ones. It is
/// not a guarantee against code outside the library that opens descriptors on another thread in
/// the same microsecond while the process sits exactly at its limit: no user-space protocol can
/// give that, short of patching CF. One spare slot beyond CF's count (`margin`) narrows that
/// window further.
///
/// A descriptor of the library's own that a thread takes while others may be making loops (the
/// wake-up port of `RunLoopEngine.installWakePort`, a descriptor source's epoll set, and the
/// `/proc` files the wait policy and the stall monitor read and the images a stall report is
/// symbolicated from, `excludingCF`) is taken under the same lock, for the same reason.
enum DescriptorHeadroom {
    /// What CF takes to make a thread's run loop with its default mode.
    static let runLoop = 3
    /// What CF takes for each new mode of a loop.
    static let mode = 2
    private static let margin = 1

    /// Serialises the library's CF allocations; holds where the last probe found the lowest free
    /// descriptor, where free ones are looked for first.
    private static let lock = Locked(Int32(0))

    /// Calls `body`, which may make CF take up to `count` descriptors, if that many (plus a
    /// spare) are free now; otherwise returns the `errno` that refused them, without calling it.
    ///
    /// Free slots are first looked for without taking any: a `poll` of the few descriptor numbers
    /// from where the last probe found the lowest free one says which are closed (and the limit
    /// which are allowed), two system calls where the probe costs five (about 0.7 µs of a thread's
    /// start). What CF takes then comes from those or from lower ones. Only when too few of them
    /// are free does the probe decide.
    static func withDescriptors<Result>(
        _ count: Int, _ body: () throws(LongThreadError) -> Result
    ) throws(LongThreadError) -> Result {
        try lock.withLock { (lowestFree: inout Int32) throws(LongThreadError) -> Result in
            if CLongThreadsShims_freeSlots(lowestFree) < count + margin {
                if let errno = probe(count + margin, lowestFree: &lowestFree) { throw .outOfResources(errno: errno) }
            }
            return try body()
        }
    }

    /// Runs `body`, which opens descriptors of its own and closes them again (the `/proc` files the
    /// wait policy and the stall monitor read, the images a stall report's symbols come from),
    /// under the lock: opened outside it, one could take a slot a probe had just found free for CF
    /// on another thread, and CF halts the process. No probe: out of descriptors, `body`'s own
    /// opens fail, and it copes. It holds up the library's thread starts while it runs: keep it short.
    static func excludingCF<Result>(_ body: () -> Result) -> Result {
        lock.withLock { _ in body() }
    }

    /// Opens `path` read-only for a brief read, under the lock (`excludingCF`); -1 when it cannot.
    static func openBriefly(_ path: String) -> Int32 {
        excludingCF { open(path, O_RDONLY | O_CLOEXEC) }
    }

    /// Takes `count` descriptors and gives them back; the errno of the first refusal, if any.
    /// `count + 1` system calls when the descriptors come out consecutive, as they nearly always
    /// do (duplicates, one `close_range`), where an open of /dev/null and a close each cost eight
    /// per thread's start. `lowestFree`: the first descriptor it got, when it got one.
    private static func probe(_ count: Int, lowestFree: inout Int32) -> Int32? {
        // On the stack: an array here would cost each thread's start an allocation.
        withUnsafeTemporaryAllocation(of: Int32.self, capacity: max(count, 1)) { taken in
            var held = 0
            defer { release(taken, held) }
            // A duplicate of standard input when it is open (a slot taken as CF's would be, at
            // a quarter of an eventfd's cost: no new file), else one eventfd; then duplicates.
            var first = fcntl(0, F_DUPFD_CLOEXEC, 0)
            if first < 0, errno == EBADF { first = CLongThreadsShims_eventfd(0) }
            if first < 0 { return errno }
            lowestFree = first
            taken[0] = first
            held = 1
            while held < count {
                let fd = fcntl(first, F_DUPFD_CLOEXEC, 0)
                if fd < 0 { return errno }
                taken[held] = fd
                held += 1
            }
            return nil
        }
    }

    /// Closes the first `held` of `taken`: in one call when they are consecutive (then every
    /// descriptor in the range is one of ours), one by one otherwise.
    private static func release(_ taken: UnsafeMutableBufferPointer<Int32>, _ held: Int) {
        guard held > 0 else { return }
        let low = taken[..<held].min()!, high = taken[..<held].max()!
        if Int(high - low) == held - 1, CLongThreadsShims_closeRange(UInt32(low), UInt32(high)) == 0 { return }
        for index in 0..<held { close(taken[index]) }
    }
}
