@testable import LongThreads

extension WaitPolicy {
    /// The machine's policy with the load, the linger or the park forced (tests decide what the
    /// scheduler would).
    static func forcing(spareCPU: Bool? = nil, linger: Forced = .learnt, park: Forced = .learnt) -> WaitPolicy {
        var policy = WaitPolicy.machine
        policy.spareCPU = spareCPU
        policy.linger = linger
        policy.park = park
        return policy
    }

    /// Forces a wait of `nanoseconds` when positive, none when negative, the learnt one at zero.
    static func forced(_ nanoseconds: Int64) -> Forced {
        nanoseconds > 0 ? .always(nanoseconds: nanoseconds) : nanoseconds < 0 ? .never : .learnt
    }
}
