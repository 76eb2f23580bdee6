import ExampleSupport
import Glibc
import LongThreads
import Synchronization

/// The daemon's one-thread resource: an append-only journal file, used only from its own
/// LongThread, `daemon.journal`. Every request from every client is serialized onto that thread,
/// so the file needs no lock and records never interleave.
///
/// Records are `<sequence>\t<text>\n`. Each batch (the lines one read brought in) is written with
/// one `write` and made durable with one `fsync` before any of its replies is sent: a client that
/// got `OK n` has record n on disk.
///
/// The process title (setproctitle(3)) is also set only here: it is not thread-safe.
final class Journal: @unchecked Sendable {
    // MARK: Immutable
    let thread: LongThread
    let path: String
    /// Whether `STALL <ms>` requests are served (`--debug-stall-requests`).
    let allowsStall: Bool
    /// `records`, published for status lines read from other threads.
    private let publishedRecords = Atomic<Int>(0)

    // MARK: Journal thread only (checked by `assertOnThread`)
    private var descriptor: Int32 = -1
    private var records = 0
    private var status = "starting"

    /// Opens (or creates) the journal on its thread, counting the records already in it.
    init(path: String, options: LongThread.Options = .init(), allowsStall: Bool = false) throws {
        self.path = path
        self.allowsStall = allowsStall
        thread = try LongThread(name: "daemon.journal", options: options)
        // An untyped closure: a typed-throws one here crashes the 6.3 compiler (LifetimeDependenceDiagnostics).
        try thread.sync { () throws -> Void in try self.open() }
    }

    private func assertOnThread() {
        precondition(thread.isCurrent, "BUG IN EXAMPLE: the journal is used off daemon.journal")
    }

    private func open() throws(DaemonError) {
        assertOnThread()
        let fd = Glibc.open(path, O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC, 0o644)
        if fd < 0 { throw .system("cannot open journal \(path)", errno: errno) }
        // Count existing records so sequence numbers continue across restarts.
        var buffer = [UInt8](repeating: 0, count: 65536)
        var count = 0
        var offset: off_t = 0
        while true {
            let n = pread(fd, &buffer, buffer.count, offset)
            if n <= 0 { break }
            count += buffer[0..<n].lazy.filter { $0 == UInt8(ascii: "\n") }.count
            offset += off_t(n)
        }
        descriptor = fd
        records = count
        publishedRecords.store(count, ordering: .relaxed)
        setTitle("starting")
    }

    /// Queues `batch` on the journal thread; `reply` is called there with one reply line per
    /// request, in order, once the batch's records are on disk.
    ///
    /// - Throws: ``LongThreadError/stopped`` once the journal began closing: the requests were not
    ///   accepted (the caller answers them `ERR shutting down`).
    func submit(
        _ batch: [Result<DaemonRequest, DaemonReplyError>],
        reply: @escaping @Sendable ([String]) -> Void
    ) throws(LongThreadError) {
        try thread.perform(label: "journal batch") { reply(self.apply(batch)) }
    }

    /// Journal thread: runs a batch. Appends go to the file with one write and one fsync.
    private func apply(_ batch: [Result<DaemonRequest, DaemonReplyError>]) -> [String] {
        assertOnThread()
        guard descriptor >= 0 else { return batch.map { _ in DaemonReplyError.shuttingDown.reply } }
        var data: [UInt8] = []
        var sequence = records
        for case .success(.append(let text)) in batch {
            sequence += 1
            data.append(contentsOf: "\(sequence)\t\(text)\n".utf8)
        }
        var failure: Int32?
        if !data.isEmpty {
            failure = writeAll(data)
            if failure == nil, fsync(descriptor) != 0 { failure = errno }
            // A failed write may have left part of the batch in the file; the sequence still
            // advances past it so that numbers are never reused.
            records = sequence
            publishedRecords.store(sequence, ordering: .relaxed)
            setTitle("serving")
        }
        // Replies in request order: a COUNT sees the appends before it in the batch, not after.
        var next = sequence - batch.count { if case .success(.append) = $0 { true } else { false } }
        return batch.map { request in
            switch request {
            case .failure(let error): return error.reply
            case .success(.ping): return "OK PONG"
            case .success(.stall(let milliseconds)):
                // Blocks the thread on purpose, as a stuck disk would: the stall monitor reports
                // it and the systemd watchdog stops being pinged.
                var pause = timespec(tv_sec: milliseconds / 1000, tv_nsec: milliseconds % 1000 * 1_000_000)
                var left = timespec()
                while nanosleep(&pause, &left) != 0, errno == EINTR { pause = left }
                return "OK STALLED \(milliseconds) ms"
            case .success(.count): return "OK \(next)"
            case .success(.append):
                next += 1
                return failure.map { DaemonReplyError.journal(errno: $0).reply } ?? "OK \(next)"
            }
        }
    }

    private func writeAll(_ data: [UInt8]) -> Int32? {
        var written = 0
        while written < data.count {
            let n = data.withUnsafeBytes { write(descriptor, $0.baseAddress! + written, data.count - written) }
            if n < 0 {
                if errno == EINTR { continue }
                return errno
            }
            written += n
        }
        return nil
    }

    /// Shows the daemon's state in `ps` and `/proc/PID/cmdline`, from the journal thread.
    func show(_ newStatus: String) {
        try? thread.perform { self.setTitle(newStatus) }
    }

    private func setTitle(_ newStatus: String) {
        assertOnThread()
        status = newStatus
        ProcessTitle.set("\(status), \(records) records")
    }

    /// The number of records, as last published by the journal thread. Any thread.
    var recordCount: Int { publishedRecords.load(ordering: .relaxed) }

    /// Closes the file once the thread has ended (its `LongThreadService` returned): the thread
    /// drained every batch it accepted, and with it gone nothing else can touch the journal.
    ///
    /// - Returns: the number of records in the journal.
    func finish() -> Int {
        precondition(thread.waitUntilExit(timeout: .zero), "BUG IN EXAMPLE: Journal.finish() before daemon.journal ended")
        if descriptor >= 0 {
            Glibc.close(descriptor)
            descriptor = -1
        }
        return records
    }
}
