import Glibc

/// One filled row: the value of each contender that could be measured on it.
struct RowResult {
    let row: Row
    let values: [String: Double]
}

/// Runs every figure, repetition by repetition, round-robin across the contenders.
enum Runner {
    static func run(_ figures: [Figure], _ contenders: [any Contender.Type], _ settings: Settings) -> [RowResult] {
        var results: [RowResult] = []
        for figure in figures {
            let eligible = contenders.filter { $0.features.isSuperset(of: figure.requires) }
            progress("\(figure.rows[0].title): \(eligible.count) contenders × \(settings.repetitions) repetitions")
            figure.setUp(settings)
            var repetitions: [String: [[Double]]] = [:]
            var turns = TurnOrder()
            for _ in 0..<settings.repetitions {
                // A new order each repetition, so that no contender always runs first (on a cold
                // cache) or right after the same neighbour (`TurnOrder`).
                let order = turns.next(eligible.count).map { eligible[$0] }
                switch figure.measure {
                case .each(let measure):
                    for type in order { repetitions[type.name, default: []].append(measure(type, settings)) }
                case .together(let measure):
                    for (type, values) in zip(order, measure(order, settings)) {
                        repetitions[type.name, default: []].append(values)
                    }
                }
            }
            figure.tearDown(settings)
            var rows = figure.rows.map { _ in [String: Double]() }
            for (name, values) in repetitions {
                for (index, value) in figure.summarize(values).enumerated() { rows[index][name] = value }
            }
            results += zip(figure.rows, rows).map { RowResult(row: $0, values: $1) }
        }
        return results
    }

    static func progress(_ message: String) {
        printToStandardError("· \(message)")
    }
}
