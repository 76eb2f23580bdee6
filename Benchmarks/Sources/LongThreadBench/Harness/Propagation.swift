import LongThreads
import LongThreadsTracing
import Tracing

/// What carrying a poster's trace context costs a post, for LongThread alone: one producer posts
/// no-op closures with `perform`, under four set-ups, each a column. Rows: the producer's CPU time
/// per post (its thread's CPU clock, so hogs do not inflate it), and the throughput from the first
/// post until the thread has run the last.
///
/// The set-ups: no propagator (the default: one atomic load per post); `ServiceContextPropagator`
/// installed but no context current where the work is posted (capture returns nil); a context
/// current, carried to every task; and a span per task (`tracingTasks`, through the default
/// `NoOpTracer`: the library's share, without a tracer's own cost).
enum Propagation {
    static let columns = ["no propagator", "installed, no context", "context carried", "span per task"]

    static func run(_ settings: Settings) -> Scaling.Section {
        let items = settings.asyncItems / 2
        var perPost: [[Double]] = Array(repeating: [], count: columns.count)
        var throughput: [[Double]] = Array(repeating: [], count: columns.count)
        // Interleaved: each repetition runs every set-up once, so drift hits them alike.
        for _ in 0..<settings.repetitions {
            for (index, _) in columns.enumerated() {
                let (cpu, rate) = measure(setUp: index, items: items)
                perPost[index].append(cpu)
                throughput[index].append(rate)
            }
        }
        LongThread.contextPropagator = nil
        return Scaling.Section(
            title: "Context propagation, \(items.formatted) posts from one producer",
            counts: [],
            columns: columns,
            lines: [
                Scaling.Line(title: "producer CPU per post", unit: "ns", values: perPost.map(Statistics.median)),
                Scaling.Line(title: "throughput", unit: "items/s", values: throughput.map(Statistics.median)),
            ])
    }

    /// One run: (producer CPU ns per post, items per second).
    private static func measure(setUp: Int, items: Int) -> (Double, Double) {
        switch setUp {
        case 0: LongThread.contextPropagator = nil
        case 3: LongThread.contextPropagator = ServiceContextPropagator(tracingTasks: true)
        default: LongThread.contextPropagator = ServiceContextPropagator()
        }
        let thread = must("start") { try LongThread(name: "bench-propagation") }
        defer { thread.stop() }
        must("warm up") { try thread.sync {} }
        let post = {
            let cpuStart = threadCPUNanoseconds(), start = nowNanoseconds()
            for _ in 0..<items { must("post") { try thread.perform {} } }
            let cpu = threadCPUNanoseconds() - cpuStart
            must("drain") { try thread.sync {} }
            let elapsed = nowNanoseconds() - start
            return (Double(cpu) / Double(items), Double(items) / (Double(elapsed) / 1e9))
        }
        guard setUp >= 2 else { return post() }
        var context = ServiceContext.topLevel
        context[RequestKey.self] = "request-42"
        return ServiceContext.withValue(context, operation: post)
    }

    /// A request id, as a server would put in its context.
    private enum RequestKey: ServiceContextKey {
        typealias Value = String
    }
}
