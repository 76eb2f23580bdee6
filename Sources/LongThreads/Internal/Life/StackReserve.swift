import CLongThreadsShims
import Glibc

/// The stack a thread gets for `Options.stackSize`, which is the work's: the library adds what
/// glibc and its own frames take, as Rust's std asks glibc for its minimum for the same reason.
///
/// - glibc: `__pthread_get_minstack` (static TLS, the thread descriptor, a page, and
///   `PTHREAD_STACK_MIN`): 24.8 KiB in a Swift test process on x86_64, glibc 2.36.
/// - The library: ``ownFrames``, scaled by a sanitizer's larger frames in such a build.
enum StackReserve {
    /// The library's own deepest use of a thread's stack, under and beside the work: the thread's
    /// entry, CF's run loop (`__CFRunLoopRun`, its source and timer callouts), the drain, a nested
    /// run in a new mode, the stall monitor's signal handled on this stack with its capture, and
    /// the Swift runtime instantiating a generic type's metadata where first used.
    ///
    /// Measured (`StackReserveTests`: the stack painted, then the deepest byte touched): 28.3 KiB
    /// from the stack's top in a debug build, of which ~4 KiB is the TLS block glibc's minimum
    /// counts again; 40 KiB keeps a quarter in hand for what a run the tests do not make reaches.
    static let ownFrames = 40 * 1024

    /// The size to ask pthread for so that the work has `work` bytes, or nil when `work` is
    /// negative or the sum does not fit the address space (`EINVAL`). A size the kernel cannot map
    /// is refused by `pthread_create` instead (`EAGAIN`).
    static func stackSize(forWork work: Int, attributes: UnsafePointer<pthread_attr_t>) -> Int? {
        guard work >= 0 else { return nil }
        let glibc = Int(clamping: CLongThreadsShims_minimumStack(attributes))
        let library = ownFrames * Int(clamping: CLongThreadsShims_sanitizerStackFactor())
        let page = max(Int(sysconf(Int32(_SC_PAGESIZE))), 4096)
        let (withGlibc, overflow1) = work.addingReportingOverflow(glibc)
        let (total, overflow2) = withGlibc.addingReportingOverflow(library + page - 1)
        guard !overflow1, !overflow2 else { return nil }
        return total / page * page
    }
}
