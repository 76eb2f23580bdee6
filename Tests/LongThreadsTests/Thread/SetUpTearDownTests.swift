import CLongThreadsShims
import Foundation
import LongThreads
import Testing

@Suite("On-thread start and end: Options.setUp and Options.tearDown")
struct SetUpTearDownTests {
    struct OpenFailed: Error {}

    /// Options whose hooks log where and when they ran: setUp the kernel thread it runs on,
    /// tearDown whether it runs on the same one and whether the thread still accepts work.
    private static func options(_ log: Recorder<String>, failing: Bool = false) -> LongThread.Options {
        let setUpThread = Recorder<Int32>()
        return .init(
            setUp: {
                setUpThread.record(CLongThreadsShims_gettid())
                log.record("setUp on \(LongThread.current?.name ?? "?")")
                if failing { throw OpenFailed() }
            },
            tearDown: {
                let same = setUpThread.events == [CLongThreadsShims_gettid()]
                log.record(same ? "tearDown on the thread" : "tearDown elsewhere")
                // The thread accepts no work any more (with the last handle gone there is none to post with).
                log.record((try? LongThread.current?.perform {}) == nil ? "refused" : "accepted")
            }
        )
    }

    @Test("setUp runs on the thread before any work; tearDown after the last item, on the thread")
    func order() throws {
        let log = Recorder<String>()
        let thread = try LongThread(name: "lt-hooks", options: Self.options(log))
        #expect(log.events == ["setUp on lt-hooks"]) // before init returned
        for index in 0..<3 { try thread.perform { log.record("item \(index)") } }
        thread.stop()
        #expect(log.events == ["setUp on lt-hooks", "item 0", "item 1", "item 2", "tearDown on the thread", "refused"])
    }

    @Test("a throwing setUp makes init throw .setUpFailed; no work runs, tearDown does not, no thread is left")
    func setUpThrows() throws {
        let log = Recorder<String>()
        #expect(throws: LongThreadError.setUpFailed(OpenFailed())) {
            _ = try LongThread(name: "lt-hooks-fail", options: Self.options(log, failing: true))
        }
        #expect(log.events == ["setUp on lt-hooks-fail"])
        let description = "\(LongThreadError.setUpFailed(OpenFailed()))"
        #expect(description.contains("OpenFailed"))
    }

    @Test("tearDown runs on every way the thread ends", arguments: ["drain", "discard", "last handle", "owner"])
    func everyEnd(way: String) throws {
        let log = Recorder<String>()
        let gate = Latch()
        var owner: NSObject? = NSObject()
        var thread: LongThread? = try LongThread(
            name: "lt-hooks-end", owner: way == "owner" ? owner : nil, options: Self.options(log)
        )
        let weakThread = WeakBox(thread!)
        try thread!.occupy(until: gate)
        try thread!.perform { log.record("queued") }
        switch way {
        case "drain":
            thread!.stop(waitUntilDone: false, pending: .drain)
        case "discard":
            thread!.stop(waitUntilDone: false, pending: .discard)
        case "owner":
            owner = nil
        default:
            break
        }
        gate.countDown()
        if way == "last handle" {
            thread = nil // deinit drains and joins
            #expect(weakThread.value == nil)
        } else if way == "owner" {
            // The owner's death is noticed when the loop wakes: give it a reason to.
            try? thread!.perform {}
            #expect(thread!.waitUntilExit(timeout: .seconds(10)))
        } else {
            #expect(thread!.waitUntilExit(timeout: .seconds(10)))
        }
        let expected = way == "discard" ? [] : ["queued"]
        #expect(log.events == ["setUp on lt-hooks-end"] + expected + ["tearDown on the thread", "refused"])
        _ = owner
    }
}
