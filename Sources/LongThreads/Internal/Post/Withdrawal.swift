/// How a waiting item lets go, the moment it is cancelled, of what holds it besides its waiter: the
/// timer of delayed work in a `WorkGroup`, or the deadline bucket of `perform(at:)` and `run(at:)`
/// (whose timer goes with its last item), so that a cancelled item's timer does not wait in the loop
/// until its deadline.
///
/// The holder is known only once the item is posted, and a cancel may come first: whichever of
/// `hold(releasing:)` and `withdraw()` comes second runs the release, exactly once.
/// - Threading: any thread.
final class Withdrawal: Sendable {
    private enum State {
        case unheld
        case held(@Sendable () -> Void)
        case withdrawn
    }

    private let state = Locked<State>(.unheld)

    /// The item was posted; `release` takes it back from its holder. Runs it at once if the item
    /// was cancelled meanwhile.
    func hold(releasing release: @escaping @Sendable () -> Void) {
        let withdrawn = state.withLock { state -> Bool in
            if case .withdrawn = state { return true }
            state = .held(release)
            return false
        }
        if withdrawn { release() }
    }

    /// The item was cancelled: its holder lets go now (or when it is posted).
    func withdraw() {
        let release = state.withLock { state -> (@Sendable () -> Void)? in
            defer { state = .withdrawn }
            if case .held(let release) = state { return release }
            return nil
        }
        release?()
    }
}
