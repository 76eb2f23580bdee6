import CoreFoundation
import ExampleSupport
import Foundation
import Synchronization

/// Queues `block` on the main thread's run loop, as Weex's `WXPerformBlockOnMainThread` does with
/// `dispatch_async(dispatch_get_main_queue(), …)`: the way results of the component thread reach
/// the UI.
///
/// `CFRunLoopPerformBlock` only queues: a sleeping loop would not notice, so it is woken too. The
/// block is never lost if the main thread is not running its loop at this moment: CF keeps it
/// until the next run in the default mode. Each block stops the run it ran in, so that
/// ``WXMainThread/run(until:timeout:)`` re-checks its condition (a stop made from inside a run is
/// never lost, unlike one sent between two runs).
///
/// - Callable from: any thread.
public func WXPerformBlockOnMainThread(_ block: @escaping @Sendable () -> Void) {
    WXMainThread.pending.add(1, ordering: .relaxed)
    let loop = WXMainThread.runLoop
    CFRunLoopPerformBlock(loop, kCFRunLoopDefaultMode.asCFType) {
        block()
        WXMainThread.pending.subtract(1, ordering: .releasing)
        CFRunLoopStop(CFRunLoopGetCurrent())
    }
    CFRunLoopWakeUp(loop)
}

/// The main thread's run loop, where Weex's UI work arrives, and the code that runs it.
///
/// ## Linux: when the main thread is parked
/// A synchronous `main.swift` runs on the process's main thread, whose loop is `CFRunLoopGetMain()`.
/// But once top-level code has an `await` (as `longthread-demo` does), and in a test runner, the
/// main thread sits parked in `dispatchMain()` and main-actor code runs on a libdispatch worker:
/// `Thread.isMainThread` is false there and `RunLoop.main.run` returns at once. Such a caller
/// makes its own thread stand in for the main thread with ``adoptCurrentThread()`` before any
/// work is queued; everything else is unchanged.
public enum WXMainThread {
    /// Blocks queued with ``WXPerformBlockOnMainThread(_:)`` that have not run yet.
    static let pending = Atomic<Int>(0)

    /// The loop that stands for the main thread's: nil means `CFRunLoopGetMain()`.
    private static let adopted = Protected<LoopBox?>(nil)

    /// The run loop UI work is queued on.
    static var runLoop: CFRunLoop { adopted.withLock { $0?.loop } ?? CFRunLoopGetMain() }

    /// True on the thread whose run loop receives UI work.
    public static var isCurrent: Bool { CFRunLoopGetCurrent() === runLoop }

    /// Makes the calling thread's run loop receive UI work from now on, for a process whose main
    /// thread cannot run a loop (see the Linux note above). Call it before queuing any UI work.
    public static func adoptCurrentThread() {
        adopted.withLock { $0 = LoopBox(loop: CFRunLoopGetCurrent()) }
    }

    /// Runs the UI loop in the default mode until `condition` holds or `timeout` passes.
    ///
    /// The loop runs only while the example waits for something, and is re-entered after each
    /// block, so a stop is never lost and the program decides when it is done (a loop left to
    /// `run()` forever cannot be stopped reliably).
    ///
    /// - Returns: true when `condition` held, false on timeout.
    /// - Precondition: called on the UI thread (``isCurrent``).
    @discardableResult
    public static func run(until condition: () -> Bool, timeout: Duration = .seconds(10)) -> Bool {
        precondition(isCurrent, "WXMainThread.run(until:timeout:) must be called on the UI thread (see adoptCurrentThread())")
        // A run in a mode with no source returns at once ("finished") and would spin: a source
        // that never fires keeps the mode non-empty (Weex adds a port to its threads' loops for
        // the same reason), so the loop sleeps until a block's wake-up.
        let keepAlive = makeKeepAliveSource()
        CFRunLoopAddSource(runLoop, keepAlive, kCFRunLoopDefaultMode)
        defer {
            CFRunLoopRemoveSource(runLoop, keepAlive, kCFRunLoopDefaultMode)
            CFRunLoopSourceInvalidate(keepAlive)
        }
        let start = ContinuousClock.now
        while !condition() {
            let left = timeout - (ContinuousClock.now - start)
            if left <= .zero { return false }
            // Returns when a queued block stopped it, or when `left` has passed.
            let seconds = Double(left.components.seconds) + Double(left.components.attoseconds) * 1e-18
            _ = CFRunLoopRunInMode(kCFRunLoopDefaultMode, seconds, false)
        }
        return true
    }

    /// Runs the UI loop until every block queued for it has run.
    @discardableResult
    public static func runUntilIdle(timeout: Duration = .seconds(10)) -> Bool {
        run(until: { pending.load(ordering: .acquiring) == 0 }, timeout: timeout)
    }

    private static func makeKeepAliveSource() -> CFRunLoopSource {
        var context = CFRunLoopSourceContext()
        context.version = 0
        context.perform = { _ in }
        return CFRunLoopSourceCreate(nil, 0, &context)!
    }

    /// A CFRunLoop reference. CF's run-loop calls used here (perform-block, wake-up, stop) are
    /// thread-safe; the loop itself is only run by its own thread.
    private struct LoopBox: @unchecked Sendable {
        let loop: CFRunLoop
    }
}

extension CFString {
    /// CF's mode names are `CFString`s; `CFRunLoopPerformBlock` takes a mode as a `CFTypeRef`.
    var asCFType: CFTypeRef { unsafeBitCast(self, to: CFTypeRef.self) }
}
