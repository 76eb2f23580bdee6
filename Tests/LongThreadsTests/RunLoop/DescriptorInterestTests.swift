import Foundation
import LongThreads
import Synchronization
import Testing

/// A source's events changed after `watch` (`enable`/`disable`): the one registration a
/// connection needs to read all the time and wait for writable only while output is pending.
@Suite("Descriptor sources: changing their events", .timeLimit(.minutes(1)))
struct DescriptorInterestTests {
    /// One end of an echo: what the handler has read and not yet sent back, and how often it
    /// started and stopped waiting for writable. On the loop thread only.
    final class Echo: @unchecked Sendable {
        var output: [UInt8] = []
        var sent = 0
        var waiting = false
        var starts = 0
        var stops = 0
        var writableWhileNotWaiting = 0
        var failure: DescriptorSource.Error?
    }

    @Test("an echo that reads all the time and waits for writable only while output is pending: every byte, both ways")
    func echoTogglesWritable() throws {
        let thread = try LongThread(name: "lt-echo")
        defer { thread.stop() }
        let (near, far) = try Self.socketPair(smallBuffers: true)
        defer { close(near); close(far) }
        let echo = Echo()
        let sourceBox = Mutex<DescriptorSource?>(nil)
        let source = try thread.watch(near, for: .readable) { events in
            guard let source = sourceBox.withLock({ $0 }) else { return }
            if events.contains(.writable), !echo.waiting { echo.writableWhileNotWaiting += 1 }
            if events.contains(.writable) { Self.flush(echo, near, source) }
            if events.contains(.readable) {
                var buffer = [UInt8](repeating: 0, count: 65536)
                let n = read(near, &buffer, buffer.count)
                // Each byte four times: every message's echo outgrows the send buffer.
                if n > 0 { echo.output += Self.quadrupled(buffer[..<n]) }
                Self.flush(echo, near, source)
            }
        }
        sourceBox.withLock { $0 = source }
        defer { source.cancel() }

        // The far end: one thread writes messages of the pattern, another reads their echo in
        // small pieces. Each message flows both ways at once (the loop echoes its start while
        // the rest arrives) and outgrows the loop's send buffer, so the loop waits for writable;
        // the next one is sent once its echo is back, so the loop's output empties in between.
        let base = (0..<Self.message).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ $0 >> 9) }
        let messageBytes: @Sendable (Int) -> [UInt8] = { index in base.map { $0 &+ UInt8(truncatingIfNeeded: index) } }
        let echoed = Latch()
        let messageBack = DispatchSemaphore(value: 0)
        let mismatches = Atomic<Int>(0)
        Thread.detachNewThread {
            for index in 0..<Self.messages {
                let chunk = messageBytes(index)
                var offset = 0
                while offset < chunk.count {
                    let n = chunk[offset...].withUnsafeBytes { send(far, $0.baseAddress!, $0.count, Int32(MSG_NOSIGNAL)) }
                    if n <= 0 { return }
                    offset += n
                }
                guard messageBack.wait(timeout: .now() + 20) == .success else { return }
            }
        }
        Thread.detachNewThread {
            var buffer = [UInt8](repeating: 0, count: 4 * Self.message)
            for index in 0..<Self.messages {
                var offset = 0
                while offset < buffer.count { // small reads: slower than the loop sends
                    let n = read(far, &buffer[offset], min(700, buffer.count - offset))
                    if n <= 0 { return }
                    offset += n
                }
                if buffer != Self.quadrupled(messageBytes(index)[...]) { mismatches.add(1, ordering: .relaxed) }
                messageBack.signal()
            }
            echoed.countDown()
        }
        #expect(echoed.wait(timeout: .seconds(50)), "the echo stalled")
        let (starts, stops, stray, failure, sent) = try thread.sync {
            (echo.starts, echo.stops, echo.writableWhileNotWaiting, echo.failure, echo.sent)
        }
        #expect(mismatches.load(ordering: .relaxed) == 0, "messages whose echo differs")
        #expect(sent == 0, "all sent")
        #expect(failure == nil)
        #expect(stray == 0, "a callout reported writable while the source did not wait for it")
        #expect(starts >= 1000, "started waiting for writable \(starts) times (stopped \(stops))")
        #expect(stops == starts, "every wait for writable ended once the output was sent")
        #expect(source.events == .readable)
    }

    /// Bytes of one message of the echo test (its echo, four times as long, is four times the
    /// loop's send buffer: 4096, doubled by the kernel), and how many messages.
    static let message = 8192
    static let messages = 1200

    /// Each byte four times.
    static func quadrupled(_ bytes: ArraySlice<UInt8>) -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: bytes.count * 4) { out, count in
            bytes.withUnsafeBufferPointer { input in
                for i in 0..<input.count {
                    out[4 * i] = input[i]; out[4 * i + 1] = input[i]; out[4 * i + 2] = input[i]; out[4 * i + 3] = input[i]
                }
            }
            count = bytes.count * 4
        }
    }

    /// Loop thread: sends what is pending until the kernel takes no more, then waits for writable,
    /// or stops waiting once everything is sent.
    static func flush(_ echo: Echo, _ fd: Int32, _ source: DescriptorSource) {
        while echo.sent < echo.output.count {
            let n = echo.output[echo.sent...].withUnsafeBytes { send(fd, $0.baseAddress!, $0.count, Int32(MSG_NOSIGNAL)) }
            if n < 0 {
                guard errno == EAGAIN else { return }
                if !echo.waiting {
                    do { try source.enable(.writable) } catch { echo.failure = error }
                    echo.waiting = true
                    echo.starts += 1
                }
                return
            }
            echo.sent += n
        }
        echo.output.removeAll(keepingCapacity: true)
        echo.sent = 0
        if echo.waiting {
            do { try source.disable(.writable) } catch { echo.failure = error }
            echo.waiting = false
            echo.stops += 1
        }
    }

    @Test("a source waiting for nothing hears hang-up, never readable; enabling brings readable, disabling takes it out again")
    func waitingForNothing() throws {
        let thread = try LongThread(name: "lt-nothing")
        defer { thread.stop() }
        let (near, far) = try Self.socketPair(smallBuffers: false)
        defer { close(near) }
        let readableCalls = Counter()
        let called = Latch()
        let hungUp = Latch()
        // Hang-up stays reported pass after pass (level-triggered) until the source is cancelled.
        let source = try thread.watch(near, for: []) { events in
            if events.contains(.hangUp) { hungUp.countDown() }
            if events.contains(.readable) {
                readableCalls.increment()
                called.countDown()
            }
        }
        defer { source.cancel() }
        #expect(source.events == [])
        close(far) // a hang-up, and readable (end of stream), forever
        #expect(hungUp.wait(), "hang-up is reported whatever the source waits for (epoll's EPOLLHUP)")
        try thread.sync {} // a pass after the hang-up
        try thread.sync {}
        #expect(readableCalls.value == 0, "readable is reported only while asked for")

        try source.enable(.readable)
        #expect(called.wait())
        try source.disable(.readable)
        try thread.sync {} // a callout already started has ended
        let settled = readableCalls.value
        try thread.sync {}
        try thread.sync {}
        #expect(readableCalls.value == settled, "no readable callout after readable was disabled")
    }

    @Test("enabling writable from another thread while the loop is busy: the handler sees it once the loop is free")
    func enableFromAnotherThread() throws {
        let thread = try LongThread(name: "lt-other")
        defer { thread.stop() }
        let (near, far) = try Self.socketPair(smallBuffers: false)
        defer { close(near); close(far) }
        let writable = Latch()
        let source = try thread.watch(near, for: .readable) { events in
            if events.contains(.writable) { writable.countDown() }
        }
        defer { source.cancel() }
        let gate = Latch()
        try thread.perform { _ = gate.wait() }
        try source.enable(.writable) // not the loop thread, and the loop is busy
        #expect(source.events == [.readable, .writable])
        gate.countDown()
        #expect(writable.wait())
    }

    @Test("threads toggling writable at once while the loop reads: no crash, and after the last disable no writable callout")
    func concurrentToggles() throws {
        let thread = try LongThread(name: "lt-toggle")
        defer { thread.stop() }
        let (near, far) = try Self.socketPair(smallBuffers: false)
        defer { close(near); close(far) }
        let settled = Atomic<Bool>(false)
        let lateWritable = Atomic<Int>(0)
        let reads = Counter()
        let source = try thread.watch(near, for: .readable) { events in
            if events.contains(.writable), settled.load(ordering: .acquiring) { lateWritable.add(1, ordering: .relaxed) }
            if events.contains(.readable) {
                var buffer = [UInt8](repeating: 0, count: 4096)
                let n = read(near, &buffer, buffer.count)
                if n > 0 { reads.increment(by: n) }
            }
        }
        defer { source.cancel() }
        let togglers = 4, rounds = 5000
        let finished = Latch(count: togglers)
        let errors = Atomic<Int>(0)
        for _ in 0..<togglers {
            Thread.detachNewThread {
                for _ in 0..<rounds {
                    do {
                        try source.enable(.writable)
                        try source.disable(.writable)
                    } catch {
                        errors.add(1, ordering: .relaxed)
                    }
                }
                finished.countDown()
            }
        }
        let bytes = [UInt8](repeating: 1, count: 100)
        for _ in 0..<100 { _ = write(far, bytes, bytes.count) }
        #expect(finished.wait(timeout: .seconds(30)))
        #expect(errors.load(ordering: .relaxed) == 0)
        #expect(source.events == .readable)
        try thread.sync {} // a callout that started before the last disable has ended
        settled.store(true, ordering: .releasing)
        _ = write(far, bytes, bytes.count)
        #expect(waitUntil { reads.value == 101 * bytes.count })
        try thread.sync {}
        #expect(lateWritable.load(ordering: .relaxed) == 0)
    }

    @Test("changing the events of a cancelled source, or of one whose thread stopped, throws cancelled")
    func misuseAfterCancel() throws {
        let thread = try LongThread(name: "lt-misuse")
        let (near, far) = try Self.socketPair(smallBuffers: false)
        defer { close(near); close(far) }
        let source = try thread.watch(near, for: .readable) { _ in }
        source.cancel()
        #expect(throws: DescriptorSource.Error.cancelled) { try source.enable(.writable) }
        #expect(throws: DescriptorSource.Error.cancelled) { try source.disable(.readable) }
        #expect(source.events == .readable, "unchanged by a refused change")

        // Cancelled on the thread, from its own handler, then changed there: refused too.
        let refused = Latch()
        let onThread = Mutex<DescriptorSource?>(nil)
        let second = try thread.watch(near, for: .writable) { _ in
            guard let me = onThread.withLock({ $0 }) else { return }
            me.cancel()
            do { try me.enable(.readable) } catch DescriptorSource.Error.cancelled { refused.countDown() } catch {}
        }
        onThread.withLock { $0 = second }
        #expect(refused.wait())

        let third = try thread.watch(far, for: .readable) { _ in }
        thread.stop()
        #expect(throws: DescriptorSource.Error.cancelled) { try third.enable(.writable) }
    }

    @Test("changing the events of a descriptor closed while watched is refused as invalid, not ignored")
    func misuseAfterClose() throws {
        let thread = try LongThread(name: "lt-closed")
        defer { thread.stop() }
        let (near, far) = try Self.socketPair(smallBuffers: false)
        defer { close(far) }
        let source = try thread.watch(near, for: .readable) { _ in }
        defer { source.cancel() }
        close(near) // the misuse: close before cancel
        #expect {
            try source.enable(.writable)
        } throws: { error in
            if case .invalidDescriptor = error as? DescriptorSource.Error { return true }
            return false
        }
        #expect(source.events == .readable)
    }

    static func socketPair(smallBuffers: Bool) throws -> (Int32, Int32) {
        var fds: [Int32] = [0, 0]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0 else {
            throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
        }
        _ = fcntl(fds[0], F_SETFL, O_NONBLOCK)
        if smallBuffers {
            var size: Int32 = 4096
            _ = setsockopt(fds[0], SOL_SOCKET, SO_SNDBUF, &size, socklen_t(MemoryLayout<Int32>.size))
            _ = setsockopt(fds[1], SOL_SOCKET, SO_SNDBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        return (fds[0], fds[1])
    }
}
