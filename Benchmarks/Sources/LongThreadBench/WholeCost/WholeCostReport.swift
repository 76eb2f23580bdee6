/// The whole-cost table: each contender's value, the best reference peer, and LongThread's
/// value over that peer's with the row's bar.
enum WholeCostReport {
    static func table(_ results: [RowResult], _ contenders: [any Contender.Type]) -> String {
        let peers = contenders.filter { $0.features.contains(.roundTrip) }.map { $0.name }.filter { $0 != Report.subject }
        var lines = ["| Figure | Unit | \(Report.subject) | " + peers.joined(separator: " | ")
                     + " | best peer | \(Report.subject) ÷ best | bar |",
                     "|---|---|---:|" + peers.map { _ in "---:|" }.joined() + "---|---:|---|"]
        for result in results {
            let cells = peers.map { result.values[$0].map(Report.format) ?? "n/a" }
            let best = bestPeer(result)
            let ratio = result.values[Report.subject].flatMap { mine in best.map { mine / $0.value } }
            lines.append("| \(result.row.title) | \(result.row.unit) | \(result.values[Report.subject].map(Report.format) ?? "n/a") | "
                         + cells.joined(separator: " | ")
                         + " | \(best?.name ?? "—") | \(ratio.map { String(format2: $0) + "×" } ?? "—") | \(bar(result, ratio)) |")
        }
        return lines.joined(separator: "\n")
    }

    /// The best of the reference peers on this row (lowest, or highest where higher is better).
    static func bestPeer(_ result: RowResult) -> (name: String, value: Double)? {
        let candidates = WholeCost.referencePeers.compactMap { name in result.values[name].map { (name: name, value: $0) } }
            .filter { $0.value > 0 || result.row.higherIsBetter }
        return result.row.higherIsBetter ? candidates.max { $0.value < $1.value } : candidates.min { $0.value < $1.value }
    }

    /// "✓ ≤ 1.1×", "✗ ≥ 0.8×", or empty when the row has no bar or no value.
    static func bar(_ result: RowResult, _ ratio: Double?) -> String {
        guard let target = result.row.target else { return "" }
        switch target {
        case .ratioAtMost(let limit):
            guard let ratio else { return "" }
            return "\(ratio <= limit ? "✓" : "✗") ≤ \(String(format2: limit))×"
        case .ratioAtLeast(let limit):
            guard let ratio else { return "" }
            return "\(ratio >= limit ? "✓" : "✗") ≥ \(String(format2: limit))×"
        case .valueAtLeast(let limit):
            guard let mine = result.values[Report.subject] else { return "" }
            return "\(mine >= limit ? "✓" : "✗") ≥ \(String(format2: limit))"
        }
    }
}
