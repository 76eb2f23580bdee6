import Foundation
import LongThreads
import Synchronization
import Testing

/// Android's descriptor cases of `android.os.cts.MessageQueueTest` (CTS,
/// `tests/tests/os/src/android/os/cts/MessageQueueTest.java`), ported to ``DescriptorSource``.
///
/// How the vocabularies map: `addOnFileDescriptorEventListener(fd, events, listener)` is
/// `watch(fd, for:)`; `EVENT_INPUT` and `EVENT_OUTPUT` are `.readable` and `.writable`; Android's
/// `EVENT_ERROR` is never asked for here, as epoll reports hang-up and error whatever the interest:
/// a listener registered for `EVENT_ERROR` alone is a source watching `[]`. A listener's return
/// value is the source's new interest: returning 0 (unregister) is ``DescriptorSource/cancel()``,
/// returning fewer events is ``DescriptorSource/disable(_:)``. Android's `syncWait(handler)` is a
/// `sync {}`.
///
/// Divergences, each a documented decision:
/// - `...ThrowsWhenCallbackIsNull` and `testUnregisterFileDescriptorCallbackThrowsWhenFdIsNull`
///   have no Swift form: the handler is not optional, and a source is ended through its handle.
/// - `testPathologicalFileDescriptorReuseCallbacks3` registers a descriptor number again while its
///   old listener is still registered; Android replaces the old one. A thread here watches a number
///   once (`EEXIST`, see ``DescriptorSource``): the port checks that refusal, then cancels first.
@Suite("Conformance: Android MessageQueueTest, descriptor cases", .timeLimit(.minutes(1)))
struct AndroidMessageQueueDescriptorTests {
    /// A listener's own state, touched on the loop thread only.
    final class Progress: @unchecked Sendable {
        var remaining: Int
        var done = false
        var unexpected: [String] = []
        init(remaining: Int) { self.remaining = remaining }
    }

    @Test("testRegisterFileDescriptorCallbackThrowsWhenFdIsNull: an invalid descriptor is refused, whatever the events")
    func registerInvalidDescriptor() throws {
        let thread = try LongThread(name: "lt-cts-null")
        defer { thread.stop() }
        #expect(throws: DescriptorSource.Error.invalidDescriptor(errno: EBADF)) {
            try thread.watch(-1, for: []) { _ in }
        }
    }

    @Test("testUnregisterFileDescriptorCallbackDoesNothingWhenFdNotRegistered: a repeated cancel ends nothing else")
    func unregisterWhenNotRegistered() throws {
        let thread = try LongThread(name: "lt-cts-unreg")
        defer { thread.stop() }
        let (reader, writer) = try Self.makePipe()
        defer { close(reader); close(writer) }
        let first = try thread.watch(reader, for: .readable) { _ in }
        first.cancel()
        let awoke = Latch()
        let second = try thread.watch(reader, for: .readable) { _ in awoke.countDown() }
        defer { second.cancel() }
        first.cancel() // its number now belongs to `second`: left alone
        #expect(!second.isCancelled)
        #expect(write(writer, [UInt8(1)], 1) == 1)
        #expect(awoke.wait(), "the second source still hears its descriptor")
    }

    @Test("testFileDescriptorCallbacks: a writer that waits for nothing once all is written sees the error when the reader closes")
    func fileDescriptorCallbacks() throws {
        let thread = try LongThread(name: "lt-cts-fd")
        defer { thread.stop() }
        let (reader, writer) = try Self.makePipe()
        defer { close(writer) }
        let size = 256 * 1024
        let writerSawError = Latch()
        let readerDone = Latch()
        let writing = Progress(remaining: size)
        let reading = Progress(remaining: size)
        let writerSource = Mutex<DescriptorSource?>(nil)
        let readerSource = Mutex<DescriptorSource?>(nil)

        let writerHandler: @Sendable (DescriptorEvents) -> Void = { events in
            guard let source = writerSource.withLock({ $0 }) else { return }
            if !writing.done {
                // The reader closed its end: signal the test, and unregister.
                if events.contains(.error) {
                    writerSawError.countDown()
                    writing.done = true
                    source.cancel()
                    return
                }
                if events.contains(.writable) {
                    let buffer = [UInt8](repeating: 0, count: min(4096, writing.remaining))
                    let n = write(writer, buffer, buffer.count)
                    if n > 0 { writing.remaining -= n }
                    // All written: wait for nothing more (Android returns EVENT_ERROR).
                    if writing.remaining == 0 { try? source.disable(.writable) }
                    return
                }
            }
            writing.unexpected.append("writer saw \(events.rawValue), done: \(writing.done)")
        }
        let readerHandler: @Sendable (DescriptorEvents) -> Void = { events in
            guard let source = readerSource.withLock({ $0 }) else { return }
            if !reading.done {
                if events.contains(.error) {
                    reading.unexpected.append("reader saw an error")
                    source.cancel()
                    return
                }
                if events.contains(.readable) {
                    var buffer = [UInt8](repeating: 0, count: 4096)
                    let n = read(reader, &buffer, buffer.count)
                    if n > 0 { reading.remaining -= n }
                    if reading.remaining == 0 {
                        readerDone.countDown()
                        reading.done = true
                        source.cancel()
                    }
                    return
                }
            }
            reading.unexpected.append("reader saw \(events.rawValue), done: \(reading.done)")
        }

        // The handles are in place before any event: the writer's first callout needs its own.
        let readSide = try thread.watch(reader, for: []) { readerHandler($0) }
        readerSource.withLock { $0 = readSide }
        let writeSide = try thread.watch(writer, for: []) { writerHandler($0) }
        writerSource.withLock { $0 = writeSide }
        try readSide.enable(.readable)
        try writeSide.enable(.writable)

        #expect(readerDone.wait(), "the reader saw all the data")
        // The reader's source is cancelled: close its end, as if it crashed.
        close(reader)
        #expect(writerSawError.wait(), "the writer, waiting for nothing, saw the error of a pipe with no reader")
        // Both ended already: ending them again does nothing bad.
        readSide.cancel()
        writeSide.cancel()
        let unexpected = try thread.sync { writing.unexpected + reading.unexpected }
        #expect(unexpected.isEmpty)
        #expect(writeSide.events == [])
    }

    @Test("testPathologicalFileDescriptorReuseCallbacks1: a listener for errors only is woken by hang-up; its number serves a new pipe")
    func pathologicalReuse1() throws {
        let thread = try LongThread(name: "lt-cts-reuse1")
        defer { thread.stop() }
        let (reader, writer) = try Self.makePipe()
        let source = try Self.hangUp(reader, writer, on: thread) { me in
            close(reader) // before unregistering, as Android's listener does
            me.cancel()
        }
        #expect(source.isCancelled)

        let (reader2, writer2) = try Self.makePipe()
        try Self.expectHangUpHeard(reader: reader2, writer: writer2, on: thread)
    }

    @Test("testPathologicalFileDescriptorReuseCallbacks2: its number given to another pipe inside the callout, then watched again")
    func pathologicalReuse2() throws {
        let thread = try LongThread(name: "lt-cts-reuse2")
        defer { thread.stop() }
        let (reader, writer) = try Self.makePipe()
        let (reader2, writer2) = try Self.makePipe()
        try Self.hangUp(reader, writer, on: thread) { me in
            Self.hijack(reader, with: reader2) // closes the old pipe's reader, reuses its number
            me.cancel()
        }

        // `reader` is now the second pipe's read end.
        try Self.expectHangUpHeard(reader: reader, writer: writer2, on: thread)
    }

    @Test("testPathologicalFileDescriptorReuseCallbacks3: the reused number watched from inside the old source's callout (EEXIST until it is cancelled)")
    func pathologicalReuse3() throws {
        let thread = try LongThread(name: "lt-cts-reuse3")
        defer { thread.stop() }
        let (reader, writer) = try Self.makePipe()
        let (reader2, writer2) = try Self.makePipe()
        let awoke2 = Latch()
        let refusedWhileOldWatched = Atomic<Bool>(false)
        let box2 = Mutex<DescriptorSource?>(nil)
        try Self.hangUp(reader, writer, on: thread) { me in
            Self.hijack(reader, with: reader2)
            // Divergence: Android replaces the old listener; here the number is watched once.
            do {
                _ = try thread.watch(reader, for: .readable) { _ in }
            } catch DescriptorSource.Error.invalidDescriptor(errno: EEXIST) {
                refusedWhileOldWatched.store(true, ordering: .relaxed)
            } catch {}
            me.cancel()
            let second = try? thread.watch(reader, for: .readable) { _ in
                awoke2.countDown()
                box2.withLock { $0 }?.cancel()
            }
            box2.withLock { $0 = second }
        }
        let refused = refusedWhileOldWatched.load(ordering: .relaxed)
        #expect(refused)
        #expect(box2.withLock { $0 } != nil, "watched from the callout once the old source was cancelled")

        close(writer2)
        #expect(awoke2.wait(), "the second source hears the new pipe")
        try thread.sync {}
        close(reader)
    }

    @Test("testPathologicalFileDescriptorReuseCallbacks4: a descriptor closed in its callout while a duplicate keeps its file open: the loop sleeps, it does not spin")
    func pathologicalReuse4() throws {
        let thread = try LongThread(name: "lt-cts-reuse4")
        defer { thread.stop() }
        let (reader, writer) = try Self.makePipe()
        let duplicate = dup(reader)
        defer { close(duplicate) }
        try Self.hangUp(reader, writer, on: thread) { me in
            close(reader) // closed before unregistering: epoll cannot remove it by number any more
            me.cancel()
        }

        // Android waits 2 s and allows 1 s of the looper's CPU; the same ratio over 1 s here.
        let before = try thread.sync { Self.threadCPUTime() }
        Thread.sleep(forTimeInterval: 1)
        let spent = try thread.sync { Self.threadCPUTime() } - before
        #expect(spent < .milliseconds(500), "the loop spent \(spent) of CPU in 1 s: it spins")
    }

    // MARK: - Helpers

    /// Watches `reader` for nothing (Android's `EVENT_ERROR` alone), closes `writer`, and returns
    /// once the hang-up woke the source, its callout ran `callout` (which cancels it: Android's
    /// `return 0`), and a `sync` followed (Android's `syncWait`).
    @discardableResult
    static func hangUp(_ reader: Int32, _ writer: Int32, on thread: LongThread,
                       callout: @escaping @Sendable (DescriptorSource) -> Void) throws -> DescriptorSource {
        let awoke = Latch()
        let box = Mutex<DescriptorSource?>(nil)
        let source = try thread.watch(reader, for: []) { _ in
            guard let me = box.withLock({ $0 }) else { return }
            awoke.countDown()
            callout(me)
        }
        box.withLock { $0 = source }
        close(writer)
        #expect(awoke.wait(), "a source waiting for nothing was woken by hang-up")
        try thread.sync {}
        return source
    }

    /// A pipe's read end watched for readable is woken by its writer's hang-up (the second half
    /// of the reuse cases); closes both ends.
    static func expectHangUpHeard(reader: Int32, writer: Int32, on thread: LongThread) throws {
        let awoke = Latch()
        let box = Mutex<DescriptorSource?>(nil)
        let source = try thread.watch(reader, for: .readable) { _ in
            awoke.countDown()
            box.withLock { $0 }?.cancel()
        }
        box.withLock { $0 = source }
        close(writer)
        #expect(awoke.wait(), "the pipe behind the number is heard")
        try thread.sync {}
        close(reader)
    }

    /// Android's `hijackFd`: `oldReader`'s number now names `newReader`'s pipe (the old pipe's
    /// reader is closed by `dup2`), and `newReader`'s own number is closed.
    static func hijack(_ oldReader: Int32, with newReader: Int32) {
        _ = dup2(newReader, oldReader)
        close(newReader)
    }

    /// A pipe whose ends do not block: (read end, write end).
    static func makePipe() throws -> (Int32, Int32) {
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        _ = fcntl(fds[0], F_SETFL, O_NONBLOCK)
        _ = fcntl(fds[1], F_SETFL, O_NONBLOCK)
        return (fds[0], fds[1])
    }

    /// The calling thread's CPU time.
    static func threadCPUTime() -> Duration {
        var now = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now)
        return .seconds(now.tv_sec) + .nanoseconds(now.tv_nsec)
    }
}
