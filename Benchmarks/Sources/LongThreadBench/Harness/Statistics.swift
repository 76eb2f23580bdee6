/// Order statistics over pooled samples; nearest-rank, so every reported value was observed.
enum Statistics {
    static func percentile(_ samples: [Double], _ fraction: Double) -> Double {
        precondition(!samples.isEmpty)
        let sorted = samples.sorted()
        let rank = Int((fraction * Double(sorted.count)).rounded(.up))
        return sorted[min(max(rank, 1), sorted.count) - 1]
    }

    static func median(_ samples: [Double]) -> Double {
        let sorted = samples.sorted()
        let middle = sorted.count / 2
        return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
    }
}
