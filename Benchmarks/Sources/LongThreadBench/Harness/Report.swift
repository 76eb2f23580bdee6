import Glibc

/// The markdown table, and the bars LongThread is held to, checked against it.
enum Report {
    static let subject = "LongThread"

    static func table(_ results: [RowResult], _ contenders: [any Contender.Type]) -> String {
        let peers = contenders.map { $0.name }.filter { $0 != subject }
        var lines = ["| Figure | Unit | \(subject) | " + peers.joined(separator: " | ") + " |",
                     "|---|---|---:|" + peers.map { _ in "---:|" }.joined()]
        for result in results {
            let mine = result.values[subject]
            let cells = peers.map { peer -> String in
                guard let theirs = result.values[peer] else { return "n/a" }
                guard let mine else { return format(theirs) }
                return "\(format(theirs)) (\(advantage(mine, theirs, result.row.higherIsBetter)))"
            }
            lines.append("| \(result.row.title) | \(result.row.unit) | \(mine.map(format) ?? "n/a") | "
                         + cells.joined(separator: " | ") + " |")
        }
        return lines.joined(separator: "\n")
    }

    /// How many times better LongThread is than a peer on this row (>1: LongThread leads).
    static func advantage(_ mine: Double, _ theirs: Double, _ higherIsBetter: Bool) -> String {
        let (better, worse) = higherIsBetter ? (mine, theirs) : (theirs, mine)
        if better == worse { return "=" }
        // A size delta can come out below zero (memory freed meanwhile by an earlier worker's
        // teardown): no meaningful ratio then.
        if mine < 0 || theirs < 0 { return "—" }
        if worse <= 0 { return "∞×" }
        let ratio = better / worse
        return (ratio >= 100 ? String(Int(ratio.rounded())) : String(format2: ratio)) + "×"
    }

    static func format(_ value: Double) -> String {
        switch abs(value) {
        case 0: "0"
        case 100...: String(Int(value.rounded()))
        case 10...: String(format1: value)
        case 0.1...: String(format2: value)
        default: String(format3: value)  // amortized counts such as 0.003 allocations per task
        }
    }

    // MARK: Bars

    /// The bars LongThread is held to against its peers and floors (async throughput, round trip,
    /// caller CPU, life, idle cost, heap, allocations), each with the numbers behind it. Only the
    /// ones whose rows ran.
    static func bars(_ results: [RowResult], hogs: Int) -> [String] {
        func value(_ title: String, _ contender: String) -> Double? {
            results.first { $0.row.title == title }?.values[contender]
        }
        var lines: [String] = []
        func check(_ text: String, _ mine: Double?, _ limit: Double?, _ passes: (Double, Double) -> Bool) {
            guard let mine, let limit else { return }
            lines.append("- [\(passes(mine, limit) ? "x" : " ")] \(text): \(format(mine)) vs \(format(limit))")
        }
        for producers in [1, 4] {
            let row = "async throughput, \(producers) producer\(producers == 1 ? "" : "s")"
            let factor = producers == 1 ? 2.0 : 1.5
            check("\(row) ≥ \(format(factor))× NIO", value(row, subject), value(row, NIOPeer.name).map { $0 * factor }, >=)
            check("\(row) > pthread+condvar", value(row, subject), value(row, CondvarPeer.name), >)
        }
        let pinned = "round trip, pinned to 1 CPU p50", unpinned = "round trip, unpinned p50"
        check("pinned p50 ≤ NIO", value(pinned, subject), value(pinned, NIOPeer.name), <=)
        check("pinned p50 ≤ 1.3× futex (aim)", value(pinned, subject), value(pinned, FutexFloor.name).map { $0 * 1.3 }, <=)
        check("unpinned p50 ≤ 1.05× futex", value(unpinned, subject), value(unpinned, FutexFloor.name).map { $0 * 1.05 }, <=)
        // A waiter that never loses to a sleeping one, idle or loaded.
        let sleepers = [CondvarPeer.name, DispatchPeer.name, NIOPeer.name]
        func best(_ row: String) -> Double? { sleepers.compactMap { value(row, $0) }.min() }
        check("unpinned p50 ≤ best of condvar, Dispatch, NIO", value(unpinned, subject), best(unpinned), <=)
        let p99 = "round trip, unpinned p99"
        check("unpinned p99 ≤ 1.5× best of condvar, Dispatch, NIO", value(p99, subject), best(p99).map { $0 * 1.5 }, <=)
        let cpu = "caller CPU per round trip, unpinned"
        check("caller CPU per round trip ≤ 1.2× pthread+condvar", value(cpu, subject), value(cpu, CondvarPeer.name).map { $0 * 1.2 }, <=)
        let life = "create + 1 sync task + stop + join"
        let lifeFactor = hogs == 0 ? 1.0 : 1.2
        check("lifecycle ≤ \(format(lifeFactor))× CF source0", value(life, subject), value(life, CFSource0Peer.name).map { $0 * lifeFactor }, <=)
        check("lifecycle ≤ 2× bare pthread", value(life, subject), value(life, PthreadCreateFloor.name).map { $0 * 2 }, <=)
        check("idle wake-ups = 0", value("idle wake-ups per idle period", subject), 0, <=)
        check("idle CPU time = 0 µs", value("idle CPU time per idle period", subject), 0, <=)
        check("heap per idle thread < 8 KiB", value("heap per idle worker", subject), 8, <)
        // A no-op closure has no context to allocate; what remains is amortized buffer growth.
        check("allocations per async task (no-op closure, no context) < 0.05",
              value("allocations per async task", subject), 0.05, <)
        return lines
    }
}

extension String {
    init(format1 value: Double) { self = Self.fixed(value, digits: 1) }
    init(format2 value: Double) { self = Self.fixed(value, digits: 2) }
    init(format3 value: Double) { self = Self.fixed(value, digits: 3) }

    /// Fixed-point without Foundation's `String(format:)`.
    private static func fixed(_ value: Double, digits: Int) -> String {
        var scale = 1.0
        for _ in 0..<digits { scale *= 10 }
        let scaled = Int((abs(value) * scale).rounded())
        let whole = scaled / Int(scale), fraction = String(scaled % Int(scale))
        let padded = String(repeating: "0", count: digits - fraction.count) + fraction
        return (value < 0 ? "-" : "") + "\(whole).\(padded)"
    }
}
