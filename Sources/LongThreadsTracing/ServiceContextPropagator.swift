import LongThreads
import Tracing

/// Carries swift-distributed-tracing's `ServiceContext` to work posted on a `LongThread`,
/// and optionally traces each such task as a span with its queue wait.
///
/// `ServiceContext.current` is a task-local: work posted with `perform`, `sync` or `run` runs on the
/// thread's run loop, outside the poster's task, and would see nil. Installed as
/// `LongThread.contextPropagator` (``bootstrap(tracingTasks:tracer:)`` does it), this
/// captures the poster's context at post time and makes it current around the work on the thread.
///
/// With `tracingTasks`, each task posted from a context runs in a span of its own: named after the
/// task's label (or "LongThread task"), a child of the poster's span and linked to it, with the
/// attributes `longthread.name` and `longthread.queue.wait_ns` (how long it waited in the queue).
/// Work posted where no context is current is queued unchanged and gets no span.
///
/// - Threading: `capture(label:)` runs where the work is posted; `restore(_:label:around:)` on the
///   LongThread, around the work.
public struct ServiceContextPropagator: ContextPropagator {
    /// Whether each task runs in a span of its own.
    public let tracingTasks: Bool
    private let tracer: (any Tracer)?

    /// Makes a propagator.
    ///
    /// - Parameters:
    ///   - tracingTasks: Whether each task posted from a context runs in a span of its own.
    ///   - tracer: The tracer of those spans; nil (the default) uses `InstrumentationSystem.tracer`,
    ///     as the application bootstrapped it.
    public init(tracingTasks: Bool = false, tracer: (any Tracer)? = nil) {
        self.tracingTasks = tracingTasks
        self.tracer = tracer
    }

    /// Installs a ``ServiceContextPropagator`` as the process-wide
    /// `LongThread.contextPropagator`, replacing any other.
    ///
    /// Call it once at start-up, after bootstrapping the tracer, before posting work.
    /// - Parameters:
    ///   - tracingTasks: Whether each task posted from a context runs in a span of its own.
    ///   - tracer: The tracer of those spans; nil uses `InstrumentationSystem.tracer`.
    public static func bootstrap(tracingTasks: Bool = false, tracer: (any Tracer)? = nil) {
        LongThread.contextPropagator = ServiceContextPropagator(tracingTasks: tracingTasks, tracer: tracer)
    }

    /// Captures `ServiceContext.current`, or nil when there is none.
    ///
    /// - Parameter label: The task's label (unused here: the span takes it on the thread).
    /// - Returns: The context, with the post time when tasks are traced.
    public func capture(label: String?) -> (any Sendable)? {
        guard let context = ServiceContext.current else { return nil }
        return Posted(context: context, at: tracingTasks ? .now : nil)
    }

    /// Runs `work` with the captured context current, in a span of its own when tasks are traced.
    ///
    /// - Parameters:
    ///   - captured: What ``capture(label:)`` returned.
    ///   - label: The task's label, the span's name.
    ///   - work: The posted work.
    /// - Throws: What `work` throws (recorded on the span).
    /// - Returns: What `work` returns.
    public func restore<Result>(
        _ captured: any Sendable,
        label: String?,
        around work: () throws -> Result
    ) rethrows -> Result {
        guard let posted = captured as? Posted else { return try work() }
        guard let postedAt = posted.at else {
            return try ServiceContext.withValue(posted.context, operation: work)
        }
        let waited = ContinuousClock.now - postedAt
        let span = (tracer ?? InstrumentationSystem.tracer).startSpan(
            label ?? "LongThread task",
            context: posted.context,
            ofKind: .internal
        )
        defer { span.end() }
        span.addLink(SpanLink(context: posted.context, attributes: [:]))
        span.attributes["longthread.queue.wait_ns"] = Self.nanoseconds(waited)
        if let name = LongThread.current?.name { span.attributes["longthread.name"] = name }
        do {
            return try ServiceContext.withValue(span.context, operation: work)
        } catch {
            span.recordError(error)
            throw error
        }
    }

    private static func nanoseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }

    /// The poster's context and, when tasks are traced, when the work was posted.
    private struct Posted: Sendable {
        let context: ServiceContext
        let at: ContinuousClock.Instant?
    }
}
