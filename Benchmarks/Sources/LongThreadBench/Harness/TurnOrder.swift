/// The order in which contenders take their turns: a new random permutation each round, drawn from
/// a fixed seed, so that a run can be repeated exactly.
///
/// A rotation is not enough. It changes who goes first, but each contender still runs right after
/// the same neighbour, and on this VM the neighbour decides where the next thread starts. Measured
/// with lives shuffled (10 repetitions of 200, idle): after a bare-pthread, condvar or futex life,
/// the next worker shared its creator's CPU in 23–40% of lives (264–297 µs); after any other
/// contender, in 75–96% (209–223 µs), for LongThread and the CF source0 peer alike. Under the
/// rotation LongThread always followed the `pthread_create` floor, and so lost 15% to a peer that
/// ran at parity with it after every common neighbour.
struct TurnOrder {
    private var state: UInt64

    init(seed: UInt64 = 0x4C6F_6E67_5468_7264) {
        state = seed
    }

    /// A permutation of `0..<count` (Fisher–Yates).
    mutating func next(_ count: Int) -> [Int] {
        var order = Array(0..<count)
        for index in stride(from: count - 1, to: 0, by: -1) {
            order.swapAt(index, Int(random() % UInt64(index + 1)))
        }
        return order
    }

    /// SplitMix64: a small generator with a full period, ample for ordering a few contenders.
    private mutating func random() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var mixed = state
        mixed = (mixed ^ (mixed >> 30)) &* 0xBF58_476D_1CE4_E5B9
        mixed = (mixed ^ (mixed >> 27)) &* 0x94D0_49BB_1331_11EB
        return mixed ^ (mixed >> 31)
    }
}
