import Dispatch
import ExampleSupport
import Foundation
import LongThreads

/// The AFNetworking example end to end: what `longthread-demo` runs and the tests drive.
public enum AFNetworkingExample {
    /// What a run did.
    public struct Report: Sendable {
        /// Each request's outcome, by request index.
        public var results: [Int: Result<AFHTTPResponse, AFURLError>]
        /// How many completions each request got (exactly one each, if all is well).
        public var completionCounts: [Int: Int]
        /// Request indices in the order their completions ran on the callback queue.
        public var completionOrder: [Int]
        /// Whether every completion ran on the serial callback queue.
        public var allOnCallbackQueue: Bool
        /// The index of the request cancelled mid-flight.
        public var cancelledIndex: Int
        /// The index of the request to a closed port.
        public var closedPortIndex: Int
        /// The network thread's name, and how many distinct threads `networkRequestThread` gave
        /// callers racing to create it.
        public var networkThreadName: String?
        public var networkThreadsSeen: Int
    }

    /// Runs `count` concurrent GETs against the example server, one `/slow` request cancelled
    /// once the server has it (mid-flight), and one request to a closed port; waits (bounded) for
    /// every completion.
    ///
    /// - Parameters:
    ///   - count: how many `GET /hello/<n>` requests to make.
    ///   - log: called with a line for each step, on the calling thread.
    ///   - progress: called on the callback queue after each completion, with
    ///     (completed, total).
    /// - Returns: what happened to each request.
    /// - Throws: ``AFURLError`` if the example server cannot start, or a step does not finish
    ///   within 10 seconds.
    public static func run(
        count: Int = 20,
        log: @escaping @Sendable (String) -> Void = { print($0) },
        progress: @escaping @Sendable (Int, Int) -> Void = { _, _ in }
    ) throws -> Report {
        let slowArrived = DispatchSemaphore(value: 0)
        let server = try AFExampleServer(onSlowRequest: { slowArrived.signal() })
        defer { server.stop() }
        log("example server listening on 127.0.0.1:\(server.port) (thread AFNetworking.server)")

        // The shared thread, created lazily by whichever of these racing threads comes first.
        let seen = Protected<Set<ObjectIdentifier>>([])
        DispatchQueue.concurrentPerform(iterations: 4) { _ in
            let thread = AFURLConnectionOperation.networkRequestThread
            seen.withLock { _ = $0.insert(ObjectIdentifier(thread)) }
        }

        guard let closedPort = AFSocket.closedPort() else { throw AFURLError.cannotConnect(errno: errno) }
        var requests = (0..<count).map { AFURLRequest(port: server.port, path: "/hello/\($0)") }
        let cancelledIndex = requests.count
        requests.append(AFURLRequest(port: server.port, path: "/slow"))
        let closedPortIndex = requests.count
        requests.append(AFURLRequest(port: closedPort, path: "/hello/nobody"))
        let total = requests.count

        struct Record { var results: [Int: Result<AFHTTPResponse, AFURLError>] = [:]; var counts: [Int: Int] = [:]; var order: [Int] = []; var offQueue = 0 }
        let record = Protected(Record())
        let done = DispatchGroup()
        let queue = AFURLConnectionOperation.defaultCompletionQueue
        let onQueue = DispatchSpecificKey<Bool>()
        queue.setSpecific(key: onQueue, value: true)

        let operations = requests.enumerated().map { index, request in
            let operation = AFURLConnectionOperation(request: request)
            done.enter()
            operation.setCompletionBlock { result in
                let completed = record.withLock { record -> Int in
                    record.results[index] = result
                    record.counts[index, default: 0] += 1
                    record.order.append(index)
                    if DispatchQueue.getSpecific(key: onQueue) != true { record.offQueue += 1 }
                    return record.order.count
                }
                progress(completed, total)
                done.leave()
            }
            return operation
        }
        // Start them from several threads at once, as callers of a shared client would.
        DispatchQueue.concurrentPerform(iterations: operations.count) { operations[$0].start() }
        log("started \(total) requests on the AFNetworking thread: \(count) GET /hello/<n>, one GET /slow, one to closed port \(closedPort)")

        // Cancel mid-flight: once the server has read the /slow request, which it never answers.
        guard slowArrived.wait(timeout: .now() + 10) == .success else { throw AFURLError.networkConnectionLost(errno: ETIMEDOUT) }
        operations[cancelledIndex].cancel()
        log("cancelled GET /slow while in flight (the server had read it)")

        guard done.wait(timeout: .now() + 10) == .success else { throw AFURLError.networkConnectionLost(errno: ETIMEDOUT) }
        queue.sync {} // the last completion block has returned
        let final = record.withLock { $0 }
        return Report(
            results: final.results, completionCounts: final.counts, completionOrder: final.order,
            allOnCallbackQueue: final.offQueue == 0, cancelledIndex: cancelledIndex, closedPortIndex: closedPortIndex,
            networkThreadName: AFURLConnectionOperation.networkRequestThread.name,
            networkThreadsSeen: seen.withLock { $0.count }
        )
    }
}
