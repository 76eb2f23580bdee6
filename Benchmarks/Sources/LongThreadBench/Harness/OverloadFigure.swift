import Glibc
import LongThreads

extension Figures {
    /// Overload: one producer posts at ten times the rate the worker can run, for the overload
    /// period, each item carrying a 64-byte payload. Rows: the growth of resident memory at a
    /// quarter, half and the end of the period. LongThread runs twice: its unbounded queue (the
    /// "unbounded" rows, like every peer) and with `Options.queueLimit` of 10,000 items and
    /// `.block` (the "limit" rows: the producer is held back to the worker's rate, memory stays
    /// flat). Peers have no limit: their "limit" rows repeat their unbounded queue.
    static let overload = Figure(
        key: "overload",
        rows: ["unbounded", "limit 10,000"].flatMap { queue in
            ["¼", "½", "end of"].map { when in
                Row(title: "overload 10×, RSS growth at \(when) the period, \(queue)", unit: "MiB", higherIsBetter: false)
            }
        },
        requires: [.post, .discard], summary: .medianPerRow,
        measure: .each { type, settings in
            // The limited run first: its baseline is not disturbed by the freeing of a big queue.
            let limited = type == LongThreadContender.self ? Overload.run(type: type, limited: true, settings) : nil
            let unbounded = Overload.run(type: type, limited: false, settings)
            return unbounded + (limited ?? unbounded)
        })
}

/// glibc's `malloc_trim`, which the Glibc module does not export: returns freed heap to the system.
@_silgen_name("malloc_trim")
private func mallocTrim(_ pad: Int) -> Int32

enum Overload {
    /// How long one item keeps the worker busy: the worker runs 50,000 items a second.
    static let itemNanoseconds: UInt64 = 20_000
    /// Ten times the worker's rate.
    static let postsPerMillisecond = 500

    /// RSS growth (MiB) at ¼, ½ and the end of the overload period.
    static func run(type: any Contender.Type, limited: Bool, _ settings: Settings) -> [Double] {
        let post: @Sendable (@escaping @Sendable () -> Void) -> Void
        let stop: () -> Void
        if limited {
            let limit = LongThread.QueueLimit(highWatermark: 10_000, whenFull: .block)
            let thread = must("start") { try LongThread(name: "overload", options: .init(queueLimit: limit)) }
            post = { work in must("post") { try thread.perform(work) } }
            stop = { thread.stop(pending: .discard) }
        } else {
            let worker = must("start \(type.name)") { try type.init() }
            post = { work in must("post") { try worker.post(work) } }
            stop = { must("stop") { try worker.stop(.discard) } }
        }
        // Hand the memory of earlier runs' queues back to the system before the baseline.
        _ = mallocTrim(0)
        usleep(50_000)
        let baseline = ProcFS.residentBytes()
        let period = UInt64(settings.overloadSeconds * 1e9)
        let start = nowNanoseconds()
        var samples: [Double] = []
        var checkpoints = [period / 4, period / 2, period]
        var posted = 0
        while let next = checkpoints.first {
            let elapsed = nowNanoseconds() - start
            if elapsed >= next {
                samples.append(Double(ProcFS.residentBytes() - baseline) / 1_048_576)
                checkpoints.removeFirst()
                continue
            }
            // Paced: as many items as ten times the worker's rate allows by now.
            let due = Int(elapsed / 1_000_000 + 1) * postsPerMillisecond
            while posted < due {
                let payload = Payload()
                post { payload.spin() }
                posted += 1
            }
            usleep(200)
        }
        stop()
        return samples
    }

    /// 64 bytes an item carries, as a request's fields would.
    struct Payload: Sendable {
        var bytes: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0, 0, 0, 0, 0)

        func spin() {
            let end = nowNanoseconds() + Overload.itemNanoseconds + bytes.0
            while nowNanoseconds() < end {}
        }
    }
}
