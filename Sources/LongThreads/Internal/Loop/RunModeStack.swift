/// The mode of each run of a thread's loop on its stack, innermost last (`LoopState.runModes`).
///
/// Nearly always one run deep: the outer run's mode is kept inline, so a thread that never runs
/// its loop nested allocates no array for it (an array would cost every thread's life an allocation).
struct RunModeStack {
    /// The outermost run's mode; nil when the loop does not run.
    private var outer: String?
    /// The modes of the runs nested inside it, innermost last. Empty while `outer` is nil.
    private var nested: [String] = []

    /// How many runs are on the stack.
    var count: Int { outer == nil ? 0 : 1 + nested.count }

    /// The innermost run's mode.
    var last: String? { nested.last ?? outer }

    /// A run in `mode` begins.
    mutating func append(_ mode: String) {
        if outer == nil { outer = mode } else { nested.append(mode) }
    }

    /// The innermost run ended: removes and returns its mode.
    @discardableResult
    mutating func popLast() -> String? {
        if let mode = nested.popLast() { return mode }
        defer { outer = nil }
        return outer
    }
}
