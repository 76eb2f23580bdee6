import Testing

@testable import LongThreadBench

extension WholeCostHarnessTests {
@Suite("Pairs and their fairness")
struct PairsTests {
    @Test("The slowest pair's share of the mean", arguments: [
        ([10, 10, 10], 1.0), ([5, 10, 15], 0.5), ([0, 20], 0.0), ([7], 1.0), ([], 0.0), ([0, 0], 0.0),
    ])
    func slowestShare(counts: [Int], expected: Double) {
        #expect(abs(Pairs.slowestShare(counts) - expected) < 1e-9)
    }

    @Test("Pairs run together and all count")
    func pairsRun() {
        let result = Pairs.run(CondvarPeer.self, pairs: 4, seconds: 0.1)
        #expect(result.throughput > 0)
        #expect(result.slowestShare > 0 && result.slowestShare <= 1)
    }
}

}

@Suite("The whole-cost table")
struct WholeCostReportTests {
    static func result(_ values: [String: Double], higherIsBetter: Bool, target: Target?) -> RowResult {
        RowResult(row: Row(title: "t", unit: "µs", higherIsBetter: higherIsBetter, target: target), values: values)
    }

    @Test("The best peer is one of the reference peers, lowest or highest as the row says")
    func bestPeer() {
        let values = [Report.subject: 10.0, DispatchPeer.name: 12, CondvarPeer.name: 8, FutexFloor.name: 1]
        // The futex floor is no reference peer: it never sets the bar.
        #expect(WholeCostReport.bestPeer(Self.result(values, higherIsBetter: false, target: nil))?.name == CondvarPeer.name)
        #expect(WholeCostReport.bestPeer(Self.result(values, higherIsBetter: true, target: nil))?.name == DispatchPeer.name)
    }

    @Test("The bar is checked on the ratio, or on the value")
    func bars() {
        let row = Self.result([:], higherIsBetter: false, target: .ratioAtMost(1.1))
        #expect(WholeCostReport.bar(row, 1.05).hasPrefix("✓"))
        #expect(WholeCostReport.bar(row, 1.2).hasPrefix("✗"))
        let fairness = Self.result([:], higherIsBetter: true, target: .ratioAtLeast(0.8))
        #expect(WholeCostReport.bar(fairness, 0.79).hasPrefix("✗"))
        let kept = Self.result([Report.subject: 0.96], higherIsBetter: true, target: .valueAtLeast(0.95))
        #expect(WholeCostReport.bar(kept, nil).hasPrefix("✓"))
    }

    @Test("A table row reads LongThread ÷ the best peer")
    func tableRatio() {
        let values = [Report.subject: 11.0, DispatchPeer.name: 12, CondvarPeer.name: 10]
        let table = WholeCostReport.table([Self.result(values, higherIsBetter: false, target: .ratioAtMost(1.1))],
                                          [LongThreadContender.self, DispatchPeer.self, CondvarPeer.self])
        #expect(table.contains("| \(CondvarPeer.name) | 1.10× | ✓ ≤ 1.10× |"), "\(table)")
    }
}
