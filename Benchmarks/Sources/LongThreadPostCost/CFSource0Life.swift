import CoreFoundation
import Dispatch
import Glibc

/// The reference a LongThread's life is held to (no slower than it idle, within 1.2× of it with
/// hogs): the benchmark's "CF source0" peer cut to one life. A pthread makes its run loop and one
/// version-0 source in the default mode (which keeps the mode alive); one closure is handed over
/// under a mutex, the source signalled and the loop woken; a stop sets a flag the same way; the
/// creator joins. As in the peer, the source is removed on the thread before it ends, and CF's
/// thread-exit finaliser frees the loop.
final class CFSource0Life: @unchecked Sendable {
    /// What the source's callout reaches through its `info` pointer. Guarded by `mutex`.
    private final class Mailbox: @unchecked Sendable {
        var mutex = pthread_mutex_t()
        var job: (@Sendable () -> Void)?
        var stopRequested = false
        var source: CFRunLoopSource?
        var runLoop: CFRunLoop?
        var exitRequested = false  // worker thread only

        init() { pthread_mutex_init(&mutex, nil) }
        deinit { pthread_mutex_destroy(&mutex) }

        func drain() {
            pthread_mutex_lock(&mutex)
            let job = self.job
            self.job = nil
            let stopping = stopRequested
            pthread_mutex_unlock(&mutex)
            job?()
            if stopping {
                exitRequested = true
                CFRunLoopStop(CFRunLoopGetCurrent())
            }
        }
    }

    private let mailbox = Mailbox()
    private var thread = pthread_t()

    init() {
        let ready = DispatchSemaphore(value: 0)
        let context = Unmanaged.passRetained(Body(mailbox: mailbox, ready: ready)).toOpaque()
        let rc = pthread_create(&thread, nil, { context in
            Unmanaged<Body>.fromOpaque(context!).takeRetainedValue().run()
            return nil
        }, context)
        precondition(rc == 0, "pthread_create failed with \(rc)")
        ready.wait()
    }

    func roundTrip() {
        let done = DispatchSemaphore(value: 0)
        send { mailbox in
            mailbox.job = { done.signal() }
        }
        done.wait()
    }

    func stop() {
        send { $0.stopRequested = true }
        pthread_join(thread, nil)
    }

    private func send(_ change: (Mailbox) -> Void) {
        pthread_mutex_lock(&mailbox.mutex)
        change(mailbox)
        pthread_mutex_unlock(&mailbox.mutex)
        CFRunLoopSourceSignal(mailbox.source)
        CFRunLoopWakeUp(mailbox.runLoop)
    }

    private final class Body {
        let mailbox: Mailbox
        let ready: DispatchSemaphore
        init(mailbox: Mailbox, ready: DispatchSemaphore) {
            self.mailbox = mailbox
            self.ready = ready
        }

        func run() {
            var context = CFRunLoopSourceContext()
            // Unretained: the creator holds the mailbox until it has joined this thread.
            context.info = Unmanaged.passUnretained(mailbox).toOpaque()
            context.perform = { Unmanaged<Mailbox>.fromOpaque($0!).takeUnretainedValue().drain() }
            let source = CFRunLoopSourceCreate(nil, 0, &context)!
            let runLoop = CFRunLoopGetCurrent()!
            CFRunLoopAddSource(runLoop, source, kCFRunLoopDefaultMode)
            mailbox.source = source
            mailbox.runLoop = runLoop
            ready.signal()
            while !mailbox.exitRequested {
                _ = CFRunLoopRunInMode(kCFRunLoopDefaultMode, 1e10, false)
            }
            CFRunLoopRemoveSource(runLoop, source, kCFRunLoopDefaultMode)
        }
    }
}
