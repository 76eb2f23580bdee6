import AFNetworkingExample
import Dispatch
import ExampleSupport
import Foundation
import Testing

@Suite(.timeLimit(.minutes(1)))
struct AFNetworkingTests {
    @Test("concurrent requests, one cancelled mid-flight, one to a closed port: one right completion each, on the serial queue")
    func concurrentCancelClosedPort() throws {
        let report = try AFNetworkingExample.run(count: 24, log: { _ in })
        let total = 26
        #expect(report.networkThreadName == "AFNetworking")
        #expect(report.networkThreadsSeen == 1, "racing callers got one shared thread")
        #expect(report.completionCounts.count == total)
        #expect(report.completionCounts.values.allSatisfy { $0 == 1 }, "exactly one completion each")
        #expect(report.completionOrder.count == total)
        #expect(report.allOnCallbackQueue)
        for index in 0..<24 {
            let response = try #require(try report.results[index]?.get())
            #expect(response.statusCode == 200)
            #expect(response.bodyText == "hello \(index)\n")
        }
        #expect(report.results[report.cancelledIndex] == .failure(.cancelled))
        #expect(report.results[report.closedPortIndex] == .failure(.cannotConnect(errno: ECONNREFUSED)))
    }

    @Test("start and cancel run on the AFNetworking thread; cancel before start finishes once, as cancelled")
    func cancelBeforeStart() throws {
        let finished = DispatchSemaphore(value: 0)
        let calls = Protected(0)
        let operation = AFURLConnectionOperation(request: AFURLRequest(port: 1, path: "/"))
        operation.setCompletionBlock { result in
            calls.withLock { $0 += 1 }
            #expect(result == .failure(.cancelled))
            finished.signal()
        }
        operation.cancel()
        operation.start()
        operation.start()
        operation.cancel()
        #expect(finished.wait(timeout: .now() + 10) == .success)
        AFURLConnectionOperation.defaultCompletionQueue.sync {}
        #expect(calls.withLock { $0 } == 1)
        #expect(operation.state == .finished)
    }

    @Test("a 404 is a response, not an error; cancelling after the finish changes nothing")
    func notFoundThenLateCancel() throws {
        let server = try AFExampleServer()
        defer { server.stop() }
        let finished = DispatchSemaphore(value: 0)
        let operation = AFURLConnectionOperation(request: AFURLRequest(port: server.port, path: "/missing"))
        operation.setCompletionBlock { _ in finished.signal() }
        operation.start()
        #expect(finished.wait(timeout: .now() + 10) == .success)
        operation.cancel()
        let response = try #require(try operation.result?.get())
        #expect(response.statusCode == 404)
        #expect(response.bodyText == "no route for /missing\n")
    }
}
