import CLongThreadsShims
import Foundation
import LongThreads
import Testing

@Suite("Descriptor sources", .timeLimit(.minutes(1)))
struct DescriptorSourceTests {
    @Test("a pipe read one byte per callback delivers every byte (level-triggered), on the thread")
    func pipeLevelTriggered() throws {
        let thread = try LongThread(name: "lt-pipe")
        defer { thread.stop() }
        var fds: [Int32] = [0, 0]
        #expect(pipe(&fds) == 0)
        defer { close(fds[0]); close(fds[1]) }
        _ = fcntl(fds[0], F_SETFL, O_NONBLOCK)
        let received = Recorder<UInt8>()
        let onThread = Recorder<Bool>()
        let all = Latch(count: 100)
        let reader = fds[0]
        let source = try thread.watch(reader, for: .readable) { events in
            #expect(events.contains(.readable))
            var byte: UInt8 = 0
            if read(reader, &byte, 1) == 1 {
                received.record(byte)
                onThread.record(thread.isCurrent)
                all.countDown()
            }
        }
        let bytes = (0..<100).map { UInt8($0) }
        #expect(write(fds[1], bytes, bytes.count) == 100)
        #expect(all.wait())
        #expect(received.events == bytes)
        #expect(!onThread.events.contains(false))
        source.cancel()
        #expect(source.isCancelled)
    }

    @Test("no byte is lost through a socket pair, in chunks, while the thread sleeps between them")
    func socketNoLoss() throws {
        let thread = try LongThread(name: "lt-socket")
        defer { thread.stop() }
        var fds: [Int32] = [0, 0]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0)
        defer { close(fds[0]); close(fds[1]) }
        _ = fcntl(fds[0], F_SETFL, O_NONBLOCK)
        _ = fcntl(fds[1], F_SETFL, O_NONBLOCK) // a lost wake-up then fails the deadline, not hangs
        let total = 1 << 20
        let count = Counter()
        let sum = Counter()
        let done = Latch()
        let reader = fds[0]
        let source = try thread.watch(reader, for: .readable) { _ in
            var buffer = [UInt8](repeating: 0, count: 4096)
            let n = read(reader, &buffer, buffer.count)
            if n > 0 {
                count.increment(by: n)
                sum.increment(by: buffer[0..<n].reduce(0) { $0 + Int($1) })
                if count.value == total { done.countDown() }
            }
        }
        defer { source.cancel() }
        var expectedSum = 0
        var offset = 0
        let deadline = ContinuousClock.now + .seconds(20)
        while offset < total, ContinuousClock.now < deadline {
            let chunk = (0..<min(8192, total - offset)).map { UInt8((offset + $0) & 0xff) }
            expectedSum += chunk.reduce(0) { $0 + Int($1) }
            var written = 0
            while written < chunk.count {
                let n = chunk[written...].withUnsafeBytes { write(fds[1], $0.baseAddress, $0.count) }
                if n > 0 { written += n } else if ContinuousClock.now > deadline { break } else { usleep(100) }
            }
            offset += chunk.count
        }
        #expect(done.wait())
        #expect(count.value == total)
        #expect(sum.value == expectedSum)
    }

    @Test("a closed or invalid descriptor is refused with a clear error")
    func invalidDescriptor() throws {
        let thread = try LongThread(name: "lt-badfd")
        defer { thread.stop() }
        #expect(throws: DescriptorSource.Error.invalidDescriptor(errno: EBADF)) {
            try thread.watch(987_654, for: .readable) { _ in }
        }
        let file = open("/proc/self/stat", O_RDONLY)
        defer { close(file) }
        #expect(throws: DescriptorSource.Error.invalidDescriptor(errno: EPERM)) {
            try thread.watch(file, for: .readable) { _ in }
        }
    }

    @Test("after cancel on the thread, no callback follows; an eventfd wakes the sleeping thread")
    func eventfdAndCancel() throws {
        let thread = try LongThread(name: "lt-eventfd")
        defer { thread.stop() }
        let fd = CLongThreadsShims_eventfd(0)
        defer { close(fd) }
        let calls = Counter()
        let first = Latch()
        let box = Recorder<DescriptorSource>()
        let source = try thread.watch(fd, for: .readable) { _ in
            calls.increment()
            box.events.first?.cancel() // cancel from inside; the counter stays readable
            first.countDown()
        }
        box.record(source)
        var one: UInt64 = 1
        #expect(write(fd, &one, 8) == 8)
        #expect(first.wait())
        try thread.sync {}
        try thread.sync {}
        #expect(calls.value == 1)
        #expect(source.isCancelled)
    }

    @Test("a watch on a stopped thread is refused")
    func watchAfterStop() throws {
        let thread = try LongThread(name: "lt-watch-stopped")
        thread.stop()
        let fd = CLongThreadsShims_eventfd(0)
        defer { close(fd) }
        #expect(throws: LongThreadError.stopped) { try thread.watch(fd, for: .readable) { _ in } }
    }

    @Test("a dropped handle keeps its handler working until the thread stops")
    func droppedHandleKeepsWorking() throws {
        let thread = try LongThread(name: "lt-dropped")
        let fd = CLongThreadsShims_eventfd(0)
        defer { close(fd) }
        let calls = Counter()
        weak var weakTracked: Tracked?
        do {
            let tracked = Tracked()
            weakTracked = tracked
            _ = try thread.watch(fd, for: .readable) { _ in
                _ = tracked.id
                var value: UInt64 = 0
                if read(fd, &value, 8) == 8 { calls.increment() }
            }
        }
        for expected in 1...3 {
            var one: UInt64 = 1
            #expect(write(fd, &one, 8) == 8)
            #expect(waitUntil { calls.value == expected })
        }
        #expect(weakTracked != nil)
        // The stop ends it and releases the handler.
        thread.stop()
        #expect(weakTracked == nil)
        #expect(calls.value == 3)
    }

    @Test("watching a descriptor the thread already watches is refused with EEXIST, in any modes")
    func watchingTwiceIsRefused() throws {
        let thread = try LongThread(name: "lt-twice")
        defer { thread.stop() }
        let fd = CLongThreadsShims_eventfd(0)
        defer { close(fd) }
        let first = try thread.watch(fd, for: .readable) { _ in }
        #expect(throws: DescriptorSource.Error.invalidDescriptor(errno: EEXIST)) {
            try thread.watch(fd, for: .readable) { _ in }
        }
        #expect(throws: DescriptorSource.Error.invalidDescriptor(errno: EEXIST)) {
            try thread.watch(fd, for: .writable, modes: [RunLoop.Mode("lt-other")]) { _ in }
        }
        // Once cancelled, the descriptor may be watched again, and the new watch works.
        first.cancel()
        let called = Latch()
        let second = try thread.watch(fd, for: .readable) { _ in
            var value: UInt64 = 0
            if read(fd, &value, 8) == 8 { called.countDown() }
        }
        defer { second.cancel() }
        var one: UInt64 = 1
        #expect(write(fd, &one, 8) == 8)
        #expect(called.wait())
    }

    @Test("watches in one thread's modes share one epoll: 1 descriptor per socket plus a constant")
    func watchesShareOneEpoll() throws {
        // Read from the kernel's epoll bookkeeping (/proc/self/fdinfo), not from a descriptor
        // count, which other tests and libraries running in this process change meanwhile.
        let thread = try LongThread(name: "lt-many")
        let count = 200
        var pairs: [(reader: Int32, writer: Int32)] = []
        defer { for pair in pairs { close(pair.reader); close(pair.writer) } }
        var sources: [DescriptorSource] = []
        let calls = Counter()
        for _ in 0..<count {
            var fds: [Int32] = [0, 0]
            #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0)
            pairs.append((fds[0], fds[1]))
            let reader = fds[0]
            sources.append(try thread.watch(reader, for: .readable) { _ in
                var byte: UInt8 = 0
                if read(reader, &byte, 1) == 1 { calls.increment() }
            })
        }
        let readers = Set(pairs.map(\.reader))
        // One epoll instance holds every watched socket (before: one epoll per watch).
        let holders = Self.epollInstances(watching: readers)
        #expect(holders.count == 1)
        #expect(holders.values.first == readers)
        // Every socket still reaches its handler.
        for pair in pairs {
            var byte: UInt8 = 7
            #expect(write(pair.writer, &byte, 1) == 1)
        }
        #expect(waitUntil { calls.value == count })
        // Half are cancelled; the stop ends the rest and closes the shared epoll.
        for (index, source) in sources.enumerated() where index.isMultiple(of: 2) { source.cancel() }
        #expect(Self.epollInstances(watching: readers).values.first?.count == count / 2)
        thread.stop()
        #expect(!sources.contains { !$0.isCancelled })
        #expect(Self.epollInstances(watching: readers).isEmpty)
    }

    /// The open epoll instances of this process that watch any of `descriptors`, with those they
    /// watch (the `tfd:` lines of /proc/self/fdinfo).
    static func epollInstances(watching descriptors: Set<Int32>) -> [Int32: Set<Int32>] {
        var result: [Int32: Set<Int32>] = [:]
        for name in (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? [] {
            guard let fd = Int32(name),
                  (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(name)")) == "anon_inode:[eventpoll]",
                  let info = ProcessCensus.read("/proc/self/fdinfo/\(name)") else { continue }
            let watched = info.split(separator: "\n").compactMap { line -> Int32? in
                guard line.hasPrefix("tfd:") else { return nil }
                return line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first.flatMap { Int32($0) }
            }
            let ours = Set(watched).intersection(descriptors)
            if !ours.isEmpty { result[fd] = ours }
        }
        return result
    }

    @Test("out of descriptors, watch throws cannotCreate(EMFILE) and the thread keeps working")
    func outOfDescriptors() async {
        await #expect(processExitsWith: .success) {
            let thread = try! LongThread(name: "lt-emfile")
            let fd = CLongThreadsShims_eventfd(0)
            var limit = rlimit()
            getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
            limit.rlim_cur = rlim_t(ProcessCensus.descriptorCount + 16)
            precondition(setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0)
            var hog: [Int32] = []
            while true {
                let extra = dup(0)
                if extra < 0 { break }
                hog.append(extra)
            }
            do {
                _ = try thread.watch(fd, for: .readable) { _ in }
                exit(1)
            } catch let error as DescriptorSource.Error {
                if error != .cannotCreate(errno: EMFILE) { exit(2) }
            } catch {
                exit(3)
            }
            for extra in hog { close(extra) }
            // With descriptors free again, the thread and a watch work.
            let called = Latch()
            let source = try! thread.watch(fd, for: .readable) { _ in
                var value: UInt64 = 0
                if read(fd, &value, 8) == 8 { called.countDown() }
            }
            var one: UInt64 = 1
            precondition(write(fd, &one, 8) == 8)
            if !called.wait() { exit(4) }
            source.cancel()
            if (try? thread.syncBlocking { 42 }) != 42 { exit(5) }
            await thread.stop()
        }
    }

    @Test("cancels from another thread race the shared epoll's dispatch: no call after cancel and a sync, numbers reused")
    func cancelRacesDispatch() throws {
        let thread = try LongThread(name: "lt-cancel-race")
        defer { thread.stop() }
        final class Watched: @unchecked Sendable {
            let fd = CLongThreadsShims_eventfd(0)
            let calls = Counter()
            var source: DescriptorSource?
        }
        func watch(_ watched: Watched) throws {
            watched.source = try thread.watch(watched.fd, for: .readable) { _ in
                var value: UInt64 = 0
                if read(watched.fd, &value, 8) == 8 { watched.calls.increment() }
            }
        }
        var live = try (0..<32).map { _ in
            let watched = Watched()
            try watch(watched)
            return watched
        }
        for round in 0..<200 {
            // Every descriptor becomes ready; one is cancelled from this thread meanwhile, closed,
            // and its number (reused by the next eventfd) watched again.
            for watched in live {
                var one: UInt64 = 1
                _ = write(watched.fd, &one, 8)
            }
            let victim = live[round % live.count]
            victim.source?.cancel()
            try thread.sync {}  // a callout that started before the cancel has ended
            let callsAtCancel = victim.calls.value
            var one: UInt64 = 1
            _ = write(victim.fd, &one, 8)
            try thread.sync {}
            #expect(victim.calls.value == callsAtCancel)
            close(victim.fd)
            let fresh = Watched()
            try watch(fresh)
            live[round % live.count] = fresh
        }
        // The fresh watches work.
        let last = live[0]
        let before = last.calls.value
        var one: UInt64 = 1
        _ = write(last.fd, &one, 8)
        #expect(waitUntil { last.calls.value > before })
        for watched in live {
            watched.source?.cancel()
            close(watched.fd)
        }
    }
}
