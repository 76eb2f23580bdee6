/// Work awaited by a task: `run(modes:_:)`.
///
/// The continuation is resumed exactly once, by whichever comes first: the loop thread running the
/// work, a stop discarding it, or the task's cancellation before the work started (then the work is
/// skipped and the task gets `CancellationError` at once).
final class AsyncWork<T: Sendable>: WaitingWork, @unchecked Sendable {
    private enum Phase {
        case created(@Sendable () throws -> T, cancelled: Bool)
        case queued(CheckedContinuation<T, any Error>, @Sendable () throws -> T)
        /// Discarded, its closure released (`releaseWork`), its task not told yet.
        case released(CheckedContinuation<T, any Error>)
        case finished
    }

    // The closure lives in the phase, so it is released the moment the work is finished, skipped or
    // discarded, even while the queue still holds this object.
    private let phase: Locked<Phase>
    let label: String?

    init(_ work: @escaping @Sendable () throws -> T, label: String? = nil) {
        self.phase = Locked(.created(ContextCarrier.carry(work, label: label), cancelled: false))
        self.label = label
    }

    /// Installs the continuation before the work is queued. Returns false if the task was already
    /// cancelled; the continuation has then been resumed with `CancellationError`.
    func install(_ continuation: CheckedContinuation<T, any Error>) -> Bool {
        let cancelled = phase.withLock { phase -> Bool in
            guard case .created(let work, let cancelled) = phase else { return true }
            phase = cancelled ? .finished : .queued(continuation, work)
            return cancelled
        }
        if cancelled { continuation.resume(throwing: CancellationError()) }
        return !cancelled
    }

    /// The enqueue failed: report its error.
    func fail(_ error: LongThreadError) {
        claim()?.continuation.resume(throwing: error)
    }

    /// From the task's cancellation handler, any thread.
    func cancel() {
        let pending = phase.withLock { phase -> CheckedContinuation<T, any Error>? in
            switch phase {
            case .created(let work, _):
                phase = .created(work, cancelled: true)
                return nil
            case .queued(let continuation, _), .released(let continuation):
                phase = .finished
                return continuation
            case .finished:
                return nil
            }
        }
        pending?.resume(throwing: CancellationError())
    }

    func run() {
        guard let (continuation, work) = claim() else { return }
        continuation.resume(with: Result { try work() })
    }

    func discard() {
        let continuation = phase.withLock { phase -> CheckedContinuation<T, any Error>? in
            switch phase {
            case .queued(let continuation, _), .released(let continuation):
                phase = .finished
                return continuation
            case .created, .finished:
                return nil
            }
        }
        // The closure was released with the phase, under the lock: before the task resumes.
        continuation?.resume(throwing: LongThreadError.discarded)
    }

    func releaseWork() {
        phase.withLock { phase in
            if case .queued(let continuation, _) = phase { phase = .released(continuation) }
        }
    }

    private func claim() -> (continuation: CheckedContinuation<T, any Error>, work: @Sendable () throws -> T)? {
        phase.withLock { phase in
            guard case .queued(let continuation, let work) = phase else { return nil }
            phase = .finished
            return (continuation, work)
        }
    }
}

extension AsyncWork {
    /// Posts this work through `post` and suspends until it ran, was discarded, or the task was
    /// cancelled before it started (then it is skipped and `CancellationError` thrown at once).
    /// `post`'s error (`.stopped`, `.queueFull`...) is thrown as is.
    /// `onCancel` runs after the task's cancellation was handled (to release what holds the work).
    func value(
        posting post: (AsyncWork<T>) throws(LongThreadError) -> Void,
        onCancel cancelled: @Sendable () -> Void = {}
    ) async throws -> T {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                guard install(continuation) else { return }
                do throws(LongThreadError) {
                    try post(self)
                } catch {
                    fail(error)
                }
            }
        } onCancel: {
            cancel()
            cancelled()
        }
    }
}
