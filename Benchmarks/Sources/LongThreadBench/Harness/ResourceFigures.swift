import CBenchSupport
import Glibc

extension Figures {
    /// One idle worker of every contender, side by side, for the idle period. Read from /proc
    /// without touching the workers: CPU time (schedstat) and voluntary context switches, which
    /// count every time the thread went to sleep, hence every wake-up. A contender without a
    /// thread of its own (Dispatch) is charged with every thread that is neither the main
    /// thread nor another contender's worker (libdispatch's pool).
    static let idle = Figure(
        key: "idle",
        rows: [Row(title: "idle CPU time per idle period", unit: "µs", higherIsBetter: false),
               Row(title: "idle wake-ups per idle period", unit: "count", higherIsBetter: false)],
        requires: .idle, summary: .medianPerRow,
        measure: .together { types, settings in
            let workers = types.map { type in must("start \(type.name)") { try type.init() } }
            let threadIDs: [Int32?] = zip(types, workers).map { type, worker in
                guard type.features.contains(.resident) else { return nil }
                let box = ThreadIDBox()
                must("thread id") { try worker.runOnWorker { box.value = bench_gettid() } }
                return box.value
            }
            usleep(200_000)  // let each worker finish going back to sleep after that call
            let excluded = Set(threadIDs.compactMap { $0 } + [bench_gettid()]).union(Hogs.threadIDs)
            let before = usageOfAllThreads()
            usleep(UInt32(settings.idleSeconds * 1e6))
            let after = usageOfAllThreads()
            // Threads that ended during the period are lost; threads born in it count from zero.
            var unownedDelta = ProcFS.ThreadUsage()
            for (tid, usage) in after where !excluded.contains(tid) {
                unownedDelta = unownedDelta + (usage - (before[tid] ?? ProcFS.ThreadUsage()))
            }
            let results: [[Double]] = threadIDs.map { tid in
                let delta = tid.map { (after[$0] ?? ProcFS.ThreadUsage()) - (before[$0] ?? ProcFS.ThreadUsage()) }
                    ?? unownedDelta
                return [delta.cpuNanoseconds / 1e3, delta.voluntarySwitches]
            }
            for worker in workers { must("stop") { try worker.stop(.drain) } }
            return results
        })

    /// Many idle workers of one contender at once (each has run one round trip, if it can):
    /// the growth of resident memory, of the allocator's heap and of open descriptors, per worker.
    static let memory = Figure(
        key: "memory",
        rows: [Row(title: "RSS per idle worker", unit: "KiB", higherIsBetter: false),
               Row(title: "heap per idle worker", unit: "KiB", higherIsBetter: false),
               Row(title: "file descriptors per idle worker", unit: "count", higherIsBetter: false)],
        requires: .idle, summary: .medianPerRow,
        measure: .each { type, settings in
            let count = settings.idleWorkers
            // Let the previous workers' teardown finish (CF frees a loop in the exiting thread's
            // destructor, after a Foundation Thread's body has returned) before the baseline.
            usleep(50_000)
            let rss = ProcFS.residentBytes(), heap = bench_heap_in_use(), fds = ProcFS.openDescriptors()
            let workers = (0..<count).map { _ in must("start \(type.name)") { try type.init() } }
            if type.features.contains(.roundTrip) {
                for worker in workers { must("round trip") { try worker.roundTrip() } }
            }
            let results = [Double(ProcFS.residentBytes() - rss) / 1024 / Double(count),
                           (Double(bench_heap_in_use()) - Double(heap)) / 1024 / Double(count),
                           Double(ProcFS.openDescriptors() - fds) / Double(count)]
            for worker in workers { must("stop") { try worker.stop(.drain) } }
            return results
        })

    /// malloc calls (process-wide, counted by this executable's own malloc, see bench_support.c)
    /// per posted no-op closure, and per round trip, on a warmed-up worker.
    static let allocations = Figure(
        key: "alloc",
        rows: [Row(title: "allocations per async task", unit: "count", higherIsBetter: false),
               Row(title: "allocations per round trip", unit: "count", higherIsBetter: false)],
        requires: [.post, .roundTrip], summary: .medianPerRow,
        measure: .each { type, settings in
            let worker = must("start \(type.name)") { try type.init() }
            let items = settings.allocationItems
            // Warm-up: queues grow their buffers to the size the counted burst needs.
            for _ in 0..<items { must("post") { try worker.post(noWork) } }
            must("round trip") { try worker.roundTrip() }
            let perTask = countAllocations(per: items) {
                for _ in 0..<items { must("post") { try worker.post(noWork) } }
                must("round trip") { try worker.roundTrip() }
            }
            let perRoundTrip = countAllocations(per: items / 10) {
                for _ in 0..<items / 10 { must("round trip") { try worker.roundTrip() } }
            }
            must("stop") { try worker.stop(.drain) }
            return [perTask, perRoundTrip]
        })

    private static func countAllocations(per operations: Int, _ body: () -> Void) -> Double {
        let before = bench_alloc_count()
        bench_alloc_counting(1)
        body()
        bench_alloc_counting(0)
        return Double(bench_alloc_count() - before) / Double(operations)
    }

    private static func usageOfAllThreads() -> [Int32: ProcFS.ThreadUsage] {
        var usage: [Int32: ProcFS.ThreadUsage] = [:]
        for tid in ProcFS.threadIDs() { usage[tid] = ProcFS.usage(ofThread: tid) }
        return usage
    }
}

/// Carries a thread id out of a closure run on a worker (written there, read after the wait).
private final class ThreadIDBox: @unchecked Sendable {
    var value: Int32 = 0
}
