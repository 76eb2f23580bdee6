import CBenchSupport
import Glibc
import LongThreads
import NIOCore
import NIOPosix
import Synchronization

/// Cost as work grows, for LongThread alone: idle threads, descriptor watches and pending timers,
/// each at growing counts. One table: a row per measurement, a column per count.
enum Scaling {
    struct Line {
        let title: String
        let unit: String
        let values: [Double]
    }

    struct Section {
        let title: String
        let counts: [Int]
        /// Column titles when the columns are not counts (the echo: one per server).
        var columns: [String]? = nil
        let lines: [Line]
    }

    static func run(_ settings: Settings) -> [Section] {
        // Foundation's and CF's process-wide state is made by the first thread: not a thread's cost.
        must("warm up") { try LongThread(name: "bench-warm").stop() }
        Runner.progress("scaling: idle threads \(settings.idleThreadCounts)")
        let threads = idleThreads(settings)
        Runner.progress("scaling: descriptor watches \(settings.watchCounts)")
        let watches = descriptorWatches(settings)
        Runner.progress("scaling: pending timers \(settings.timerCounts)")
        let timers = pendingTimers(settings)
        return [threads, watches, timers, Echo.section(settings)]
    }

    static func markdown(_ sections: [Section]) -> String {
        sections.map { section in
            let columns = section.columns ?? section.counts.map { $0.formatted }
            var lines = ["| \(section.title) | Unit | " + columns.joined(separator: " | ") + " |",
                         "|---|---|" + columns.map { _ in "---:|" }.joined()]
            for line in section.lines {
                lines.append("| \(line.title) | \(line.unit) | " + line.values.map(Report.format).joined(separator: " | ") + " |")
            }
            return lines.joined(separator: "\n")
        }.joined(separator: "\n\n")
    }

    // MARK: Idle threads

    /// N LongThreads created (each has run one round trip) and left idle together: the time to
    /// create one, and the growth of RSS and of open descriptors per thread.
    static func idleThreads(_ settings: Settings) -> Section {
        var create: [Double] = [], rss: [Double] = [], descriptors: [Double] = []
        for count in settings.idleThreadCounts {
            let rssBefore = ProcFS.residentBytes(), fdsBefore = ProcFS.openDescriptors()
            var threads: [LongThread] = []
            threads.reserveCapacity(count)
            let start = nowNanoseconds()
            for _ in 0..<count { threads.append(must("create") { try LongThread(name: "bench-idle") }) }
            let elapsed = Double(nowNanoseconds() - start)
            for thread in threads { must("round trip") { try thread.sync {} } }
            create.append(elapsed / Double(count) / 1e3)
            rss.append(Double(ProcFS.residentBytes() - rssBefore) / 1024 / Double(count))
            descriptors.append(Double(ProcFS.openDescriptors() - fdsBefore) / Double(count))
            for thread in threads { thread.stop() }
        }
        return Section(title: "Idle LongThreads", counts: settings.idleThreadCounts, lines: [
            Line(title: "create, per thread", unit: "µs", values: create),
            Line(title: "RSS per thread", unit: "KiB", values: rss),
            Line(title: "descriptors per thread", unit: "count", values: descriptors),
        ])
    }

    // MARK: Descriptor watches

    /// N eventfds watched by one thread: the descriptors the watches cost beyond the eventfds
    /// themselves (per watch), the time to add one, and the wake-up latency of one of them (write
    /// to a random eventfd, until its handler has read it and signalled back; p50 and p99).
    static func descriptorWatches(_ settings: Settings) -> Section {
        var limit = rlimit()
        getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        limit.rlim_cur = limit.rlim_max
        setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        var extra: [Double] = [], add: [Double] = [], p50: [Double] = [], p99: [Double] = []
        for count in settings.watchCounts {
            let thread = must("create") { try LongThread(name: "bench-watch") }
            let descriptors = (0..<count).map { _ in bench_eventfd() }
            precondition(!descriptors.contains { $0 < 0 }, "out of descriptors for \(count) eventfds")
            let fdsBefore = ProcFS.openDescriptors()
            let reply = Reply()
            let start = nowNanoseconds()
            for fd in descriptors {
                _ = must("watch") {
                    try thread.watch(fd, for: .readable) { _ in
                        var value: UInt64 = 0
                        if read(fd, &value, 8) == 8 { reply.signal() }
                    }
                }
            }
            add.append(Double(nowNanoseconds() - start) / Double(count) / 1e3)
            extra.append(Double(ProcFS.openDescriptors() - fdsBefore) / Double(count))
            var generator = SystemRandomNumberGenerator()
            var samples: [Double] = []
            for _ in 0..<settings.wakeUpSamples {
                let fd = descriptors.randomElement(using: &generator)!
                let begin = nowNanoseconds()
                reply.expect { var one: UInt64 = 1; _ = write(fd, &one, 8) }
                samples.append(Double(nowNanoseconds() - begin) / 1e3)
            }
            p50.append(Statistics.percentile(samples, 0.5))
            p99.append(Statistics.percentile(samples, 0.99))
            thread.stop()  // ends every watch
            descriptors.forEach { close($0) }
        }
        return Section(title: "Descriptor watches on one thread", counts: settings.watchCounts, lines: [
            Line(title: "descriptors per watch, beyond the watched one", unit: "count", values: extra),
            Line(title: "watch(), per descriptor", unit: "µs", values: add),
            Line(title: "wake-up latency p50 (write → handler → back)", unit: "µs", values: p50),
            Line(title: "wake-up latency p99", unit: "µs", values: p99),
        ])
    }

    /// One reply at a time from a handler to the measuring thread.
    final class Reply: @unchecked Sendable {
        private let lock = PthreadLock()
        private let changed = PthreadCondition()
        private var count = 0  // guarded by `lock`

        func signal() {
            lock.lock()
            count += 1
            lock.unlock()
            changed.signal()
        }

        /// Runs `trigger` and waits for the reply it causes.
        func expect(_ trigger: () -> Void) {
            lock.lock()
            let target = count + 1
            lock.unlock()
            trigger()
            lock.lock()
            while count < target { changed.wait(lock) }
            lock.unlock()
        }
    }

    // MARK: Timers

    /// N one-hour `perform(after:)` timers pending on one thread: the time to add one and to
    /// cancel one (all added, then all cancelled, until the thread has dropped them), beside the
    /// same with NIO's `scheduleTask(in:)` on one event loop (its cancel from another thread is a
    /// task on the loop, which the closing barrier waits for).
    static func pendingTimers(_ settings: Settings) -> Section {
        var add: [Double] = [], cancel: [Double] = []
        var nioAdd: [Double] = [], nioCancel: [Double] = []
        for count in settings.timerCounts {
            let thread = must("create") { try LongThread(name: "bench-timers") }
            var timers: [LongThreadTimer] = []
            timers.reserveCapacity(count)
            var start = nowNanoseconds()
            for index in 0..<count {
                // Spread over a minute, so the deadlines are not one repeated date.
                timers.append(must("perform(after:)") { try thread.perform(after: delay(index)) {} })
            }
            add.append(Double(nowNanoseconds() - start) / Double(count) / 1e3)
            start = nowNanoseconds()
            for timer in timers { timer.cancel() }
            must("sync") { try thread.sync {} }
            cancel.append(Double(nowNanoseconds() - start) / Double(count) / 1e3)
            thread.stop()

            let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
            let loop = group.next()
            var scheduled: [Scheduled<Void>] = []
            scheduled.reserveCapacity(count)
            start = nowNanoseconds()
            for index in 0..<count {
                scheduled.append(loop.scheduleTask(in: .milliseconds(Int64(delayMilliseconds(index)))) {})
            }
            nioAdd.append(Double(nowNanoseconds() - start) / Double(count) / 1e3)
            start = nowNanoseconds()
            for task in scheduled { task.cancel() }
            must("barrier") { try loop.submit {}.wait() }
            nioCancel.append(Double(nowNanoseconds() - start) / Double(count) / 1e3)
            must("shutdown") { try group.syncShutdownGracefully() }
        }
        return Section(title: "Pending perform(after:) timers on one thread", counts: settings.timerCounts, lines: [
            Line(title: "add, per timer", unit: "µs", values: add),
            Line(title: "cancel, per timer", unit: "µs", values: cancel),
            Line(title: "NIO scheduleTask(in:), per task", unit: "µs", values: nioAdd),
            Line(title: "NIO cancel, per task", unit: "µs", values: nioCancel),
        ])
    }

    private static func delayMilliseconds(_ index: Int) -> Int { 3_600_000 + index % 60_000 }
    private static func delay(_ index: Int) -> Duration { .milliseconds(delayMilliseconds(index)) }
}
