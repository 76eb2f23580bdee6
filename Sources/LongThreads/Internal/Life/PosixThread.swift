import CLongThreadsShims
import Glibc

/// pthread creation with its result checked, and what a thread sets on itself.
///
/// Foundation's `Thread` discards a failed `pthread_create` (the thread silently never runs) and
/// drops a name set before `start()`; this creates the thread itself and names it from inside.
enum PosixThread {
    /// Creates a joinable thread running `body`, or throws `.cannotStart(errno:)`.
    static func spawn(
        options: LongThread.Options,
        body: @escaping @Sendable () -> Void
    ) throws(LongThreadError) -> pthread_t {
        let context = Unmanaged.passRetained(Body(body))
        return try create(options: options, context: context.toOpaque(), release: { context.release() }) { context in
            Unmanaged<Body>.fromOpaque(context!).takeRetainedValue().run()
            return nil
        }
    }

    /// Creates a joinable thread running `core`'s loop (`ThreadCore.threadMain`), or throws
    /// `.cannotStart(errno:)`. The core itself is the thread's argument, retained until it runs:
    /// a closure would cost two allocations per thread's life (its context and the box
    /// `pthread_create` gets).
    static func spawn(options: LongThread.Options, running core: ThreadCore) throws(LongThreadError) -> pthread_t {
        let context = Unmanaged.passRetained(core)
        return try create(options: options, context: context.toOpaque(), release: { context.release() }) { context in
            Unmanaged<ThreadCore>.fromOpaque(context!).takeRetainedValue().threadMain()
            return nil
        }
    }

    /// `pthread_create` with `options`' attributes; calls `release` (the context's reference)
    /// when no thread was made.
    private static func create(
        options: LongThread.Options,
        context: UnsafeMutableRawPointer,
        release: () -> Void,
        start: @convention(c) (UnsafeMutableRawPointer?) -> UnsafeMutableRawPointer?
    ) throws(LongThreadError) -> pthread_t {
        var attributes = pthread_attr_t()
        pthread_attr_init(&attributes)
        defer { pthread_attr_destroy(&attributes) }
        var rc: Int32 = 0
        if let stackSize = options.stackSize {
            // The size asked for is the work's; glibc's and the library's share come on top.
            if let total = StackReserve.stackSize(forWork: stackSize, attributes: &attributes) {
                rc = pthread_attr_setstacksize(&attributes, total)
            } else {
                rc = EINVAL
            }
        }
        switch options.schedulingPolicy {
        case .fifo(let priority) where rc == 0:
            rc = CLongThreadsShims_setAttrRealtime(&attributes, 1, priority)
        case .roundRobin(let priority) where rc == 0:
            rc = CLongThreadsShims_setAttrRealtime(&attributes, 2, priority)
        default:
            break
        }
        var thread = pthread_t()
        if rc == 0 { rc = pthread_create(&thread, &attributes, start, context) }
        if rc != 0 {
            release()
            throw .cannotStart(errno: rc)
        }
        return thread
    }

    /// Asks the scheduler for `slice` on the calling thread (`Options.schedulerSlice`): best
    /// effort, a refusal changes nothing else.
    static func requestSliceForCurrentThread(_ slice: Duration?) {
        guard let slice else { return }
        _ = CLongThreadsShims_setCurrentThreadSlice(UInt64(slice.clampedNanoseconds))
    }

    /// Applies the parts of `policy` a thread can only set on itself. Returns an errno on failure.
    static func applyToCurrentThread(_ policy: LongThread.SchedulingPolicy) -> Int32? {
        let rc: Int32
        switch policy {
        case .other(let nice): rc = CLongThreadsShims_setCurrentThreadNice(nice)
        case .batch: rc = CLongThreadsShims_setCurrentThreadBatchOrIdle(0)
        case .idle: rc = CLongThreadsShims_setCurrentThreadBatchOrIdle(1)
        case .inherited, .fifo, .roundRobin: rc = 0
        }
        return rc == 0 ? nil : rc
    }

    /// Names the calling thread for the kernel (`/proc/self/task/*/comm`), cut to its 15-byte limit
    /// on a character boundary (a longer name is otherwise refused with ERANGE and silently lost).
    static func setCurrentName(_ name: String) {
        // `withCString`, not the implicit conversion: that goes through `utf8CString`, an array
        // allocated per call, where a short (inline) name is copied to the stack.
        _ = kernelName(name).withCString { CLongThreadsShims_setCurrentThreadName($0) }
    }

    static func kernelName(_ name: String) -> String {
        // Most names fit: skip the walk over characters (about 1,500 instructions per start).
        if name.utf8.count <= 15 { return name }
        var result = ""
        var bytes = 0
        for character in name {
            let size = character.utf8.count
            if bytes + size > 15 { break }
            bytes += size
            result.append(character)
        }
        return result
    }

    private final class Body {
        let run: @Sendable () -> Void
        init(_ run: @escaping @Sendable () -> Void) { self.run = run }
    }
}
