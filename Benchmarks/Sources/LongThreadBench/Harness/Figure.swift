/// One line of the table.
struct Row: Sendable {
    let title: String
    let unit: String
    let higherIsBetter: Bool
    /// The bar a whole-cost row is held to; nil elsewhere.
    var target: Target? = nil
}

/// A whole-cost row's bar: on LongThread's value divided by the best reference peer's, or on
/// LongThread's value itself.
enum Target: Sendable {
    case ratioAtMost(Double)
    case ratioAtLeast(Double)
    case valueAtLeast(Double)
}

/// A measurement and the rows it fills.
///
/// A repetition yields one list of numbers per contender. With `pooled`, the lists of all
/// repetitions are concatenated and each row is a percentile of them (round trips); otherwise
/// row *i* is the median over repetitions of element *i*.
struct Figure: Sendable {
    enum Summary: Sendable {
        case medianPerRow
        case pooledPercentiles([Double])
    }

    enum Measure: Sendable {
        /// Measures one contender type, with a fresh worker each call.
        case each(@Sendable (any Contender.Type, Settings) -> [Double])
        /// Measures all eligible contenders at once (idle: they sit idle side by side).
        case together(@Sendable ([any Contender.Type], Settings) -> [[Double]])
    }

    let key: String
    let rows: [Row]
    let requires: Features
    let summary: Summary
    let measure: Measure
    var setUp: @Sendable (Settings) -> Void = { _ in }
    var tearDown: @Sendable (Settings) -> Void = { _ in }

    func summarize(_ repetitions: [[Double]]) -> [Double] {
        switch summary {
        case .medianPerRow:
            return rows.indices.map { row in Statistics.median(repetitions.map { $0[row] }) }
        case .pooledPercentiles(let fractions):
            let pooled = repetitions.flatMap { $0 }
            return fractions.map { Statistics.percentile(pooled, $0) }
        }
    }
}
