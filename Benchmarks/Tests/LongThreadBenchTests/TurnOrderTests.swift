import Testing

@testable import LongThreadBench

@Suite("The order of turns")
struct TurnOrderTests {
    @Test("Each round is a permutation of the contenders")
    func roundsArePermutations() {
        var turns = TurnOrder()
        for count in [1, 2, 3, 8] {
            for _ in 0..<100 {
                #expect(turns.next(count).sorted() == Array(0..<count))
            }
        }
    }

    /// The neighbour a contender runs after decides where its thread starts (see `TurnOrder`): over
    /// a figure's rounds each contender must follow every other one, each about as often. A
    /// rotation of a fixed order fails this: each contender always followed the same one.
    @Test("Each contender follows every other one about equally often")
    func neighboursAreSpread() {
        let count = 8, rounds = 200  // the lifecycle figure: 8 contenders, 200 lives each
        var turns = TurnOrder()
        var follows = [[Int]](repeating: [Int](repeating: 0, count: count), count: count)
        var previous: Int?
        for _ in 0..<rounds {
            for index in turns.next(count) {
                if let previous, previous != index { follows[index][previous] += 1 }
                previous = index
            }
        }
        // 200 rounds give each ordered pair about 200 × 7 / 56 ≈ 25 turns; a fair order stays
        // well inside 10...45, a fixed neighbour gives 0 or ~200.
        for index in 0..<count {
            for previous in 0..<count where previous != index {
                #expect((10...45).contains(follows[index][previous]), "\(index) after \(previous)")
            }
        }
    }

    @Test("The same seed gives the same order: a run can be repeated")
    func seedRepeats() {
        var first = TurnOrder(), second = TurnOrder()
        for _ in 0..<10 { #expect(first.next(8) == second.next(8)) }
    }
}
