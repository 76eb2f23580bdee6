import CLongThreadsShims
import Foundation
import LongThreads
import LongThreadsTestSupport
import Testing

/// A value that is not `Sendable` and logs the kernel thread it is made, used and destroyed on.
private final class Probe {
    let log: Recorder<String>
    let name: String
    var count = 0

    init(_ name: String = "probe", log: Recorder<String>) {
        self.name = name
        self.log = log
        log.record("made \(name) on \(CLongThreadsShims_gettid())")
    }

    func use() -> Int32 {
        count += 1
        return CLongThreadsShims_gettid()
    }

    deinit {
        log.record("destroyed \(name) on \(CLongThreadsShims_gettid())")
    }
}

/// A noncopyable value whose `deinit` stands for closing a C handle.
private struct Handle: ~Copyable {
    let log: Recorder<String>
    var uses = 0
    deinit { log.record("closed on \(CLongThreadsShims_gettid())") }
}

private struct MakeFailed: Error, Equatable {}

@Suite("ThreadBound: a value made, used and destroyed on its thread")
struct ThreadBoundTests {
    @Test("made, used by sync, run and perform, and destroyed when released: each on the thread")
    func madeUsedDestroyedOnTheThread() async throws {
        let log = Recorder<String>()
        let thread = try LongThread(name: "lt-bound")
        let tid = try await thread.run { CLongThreadsShims_gettid() }
        var value: ThreadBound<Probe>? = try await ThreadBound(on: thread) { Probe(log: log) }
        #expect(try await value!.run { $0.use() } == tid)
        let handle = value!
        let synced = try await offThePool { try handle.sync { $0.use() } }
        #expect(synced == tid)
        let performed = Recorder<Int32>()
        try value!.perform { performed.record($0.use()) }
        #expect(try await value!.run { (probe: inout Probe) -> Bool in probe.count == 3 && LongThread.current === thread })
        #expect(performed.events == [tid])
        #expect(try await value!.run { _ in LongThread.current?.name } == "lt-bound")
        value = nil
        #expect(handle.isCurrent == false)
        try await thread.run {} // a destruction would be queued ahead of this
        #expect(log.count == 1) // `handle` still holds the value
        _ = consume handle
        #expect(await eventually { log.count == 2 })
        #expect(log.events == ["made probe on \(tid)", "destroyed probe on \(tid)"])
        #expect(thread.isRunning) // the value went, the thread serves on
        await thread.stopAndWait()
    }

    @Test("inout: a body's changes are the value's")
    func inoutChangesStay() async throws {
        let thread = try LongThread(name: "lt-bound-inout")
        let numbers = try await ThreadBound(on: thread) { [Int]() }
        for number in 0..<5 { try numbers.perform { $0.append(number) } }
        try await offThePool { try numbers.sync { $0.append(5) } }
        #expect(try await numbers.run { $0 } == [0, 1, 2, 3, 4, 5])
        await thread.stopAndWait()
    }

    @Test("every way the thread ends destroys the value on the thread, after its last item and before tearDown",
          arguments: ["drain", "discard", "last handle", "owner"])
    func everyEnd(way: String) throws {
        let log = Recorder<String>()
        let gate = Latch()
        var owner: NSObject? = NSObject()
        var thread: LongThread? = try LongThread(
            name: "lt-bound-end", owner: way == "owner" ? owner : nil,
            options: .init(tearDown: { log.record("tearDown on \(CLongThreadsShims_gettid())") })
        )
        let tid = try thread!.kernelThreadID()
        let first = try ThreadBound(on: thread!) { Probe("first", log: log) }
        let second = try ThreadBound(on: thread!) { Probe("second", log: log) }
        try thread!.occupy(until: gate)
        try first.perform { probe in probe.log.record("queued item used \(probe.name)") }
        switch way {
        case "drain": thread!.stop(waitUntilDone: false, pending: .drain)
        case "discard": thread!.stop(waitUntilDone: false, pending: .discard)
        case "owner": owner = nil
        default: break
        }
        gate.countDown()
        if way == "last handle" {
            thread = nil // deinit drains and joins
        } else {
            if way == "owner" { try? thread!.perform {} } // the owner's death is seen when the loop wakes
            #expect(thread!.waitUntilExit(timeout: .seconds(10)))
        }
        let used = way == "discard" ? [] : ["queued item used first"]
        #expect(log.events == ["made first on \(tid)", "made second on \(tid)"] + used
            + ["destroyed second on \(tid)", "destroyed first on \(tid)", "tearDown on \(tid)"])
        // Afterwards every access is refused.
        #expect(throws: LongThreadError.stopped) { try first.sync { $0.count } }
        #expect(throws: LongThreadError.stopped) { try second.perform { _ in } }
        _ = owner
    }

    @Test("after a stop, run, sync, perform and making a value throw .stopped")
    func accessAfterStop() async throws {
        let thread = try LongThread(name: "lt-bound-stopped")
        let value = try await ThreadBound(on: thread) { 1 }
        await thread.stopAndWait()
        await #expect(throws: LongThreadError.stopped) { try await value.run { $0 } }
        #expect(throws: LongThreadError.stopped) { try value.perform { $0 += 1 } }
        _ = try await offThePool {
            #expect(throws: LongThreadError.stopped) { try value.sync { $0 } }
            #expect(throws: LongThreadError.stopped) { try ThreadBound(on: thread) { 2 } }
        }
        await #expect(throws: LongThreadError.stopped) { try await ThreadBound(on: thread) { 3 } }
    }

    @Test("a make closure that throws: its error reaches the caller, nothing is bound, the thread serves on")
    func makeThrows() async throws {
        let log = Recorder<String>()
        let thread = try LongThread(name: "lt-bound-fail")
        await #expect(throws: MakeFailed()) {
            try await ThreadBound<Probe>(on: thread) { throw MakeFailed() }
        }
        _ = try await offThePool {
            #expect(throws: MakeFailed()) { try ThreadBound<Probe>(on: thread) { throw MakeFailed() } }
        }
        let value = try await ThreadBound(on: thread) { Probe(log: log) }
        #expect(try await value.run { $0.count } == 0)
        await thread.stopAndWait()
        #expect(log.count == 2) // made and destroyed: the failed makings left nothing
    }

    @Test("a queued perform keeps the value alive: released meanwhile, it is destroyed after the body ran, even in another mode")
    func queuedPerformKeepsTheValue() throws {
        let log = Recorder<String>()
        let thread = try LongThread(name: "lt-bound-mode")
        let tid = try thread.kernelThreadID()
        let other = RunLoop.Mode("lt.bound.other")
        var value: ThreadBound<Probe>? = try ThreadBound(on: thread) { Probe(log: log) }
        try value!.perform(modes: [other]) { probe in probe.log.record("used in other on \(probe.use())") }
        value = nil
        // The destruction must wait for the body in `other`, which runs only in a run in that mode.
        try thread.sync {} // the default mode had its chance
        #expect(log.events == ["made probe on \(tid)"])
        try thread.sync { _ = try? LongThread.current!.runNested(in: other, until: .now + .seconds(10)) { log.count < 2 } }
        #expect(waitUntil { log.count == 3 })
        #expect(log.events == ["made probe on \(tid)", "used in other on \(tid)", "destroyed probe on \(tid)"])
        thread.stop()
    }

    @Test("many values on one thread: each its own, destroyed newest first when the thread ends")
    func manyValues() async throws {
        let log = Recorder<String>()
        let thread = try LongThread(name: "lt-bound-many")
        var values: [ThreadBound<Probe>] = []
        for index in 0..<100 { values.append(try await ThreadBound(on: thread) { Probe("\(index)", log: log) }) }
        for (index, value) in values.enumerated() {
            for _ in 0...index { try value.perform { _ = $0.use() } }
        }
        for (index, value) in values.enumerated() { #expect(try await value.run { $0.count } == index + 1) }
        await thread.stopAndWait()
        let destroyed = log.events.filter { $0.hasPrefix("destroyed") }.map { $0.split(separator: " ")[1] }
        #expect(destroyed == (0..<100).reversed().map { Substring("\($0)") })
    }

    @Test("concurrent callers: 32 tasks by run and 4 threads by sync, every increment counted")
    func concurrentCallers() async throws {
        let thread = try LongThread(name: "lt-bound-load")
        let counter = try await ThreadBound(on: thread) { 0 }
        await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<32 {
                group.addTask { for _ in 0..<200 { try await counter.run { $0 += 1 } } }
            }
            for _ in 0..<4 {
                group.addTask { try await offThePool { for _ in 0..<500 { try counter.sync { $0 += 1 } } } }
            }
        }
        #expect(try await counter.run { $0 } == 32 * 200 + 4 * 500)
        await thread.stopAndWait()
    }

    @Test("a noncopyable value: its deinit runs on the thread")
    func noncopyable() async throws {
        let log = Recorder<String>()
        let thread = try LongThread(name: "lt-bound-nc")
        let tid = try await thread.run { CLongThreadsShims_gettid() }
        var handle: ThreadBound<Handle>? = try await ThreadBound(on: thread) { Handle(log: log) }
        #expect(try await handle!.run { h in h.uses += 1; return h.uses } == 1)
        handle = nil
        #expect(await eventually { log.count == 1 })
        #expect(log.events == ["closed on \(tid)"])
        await thread.stopAndWait()
    }
}

@Suite("ThreadBound misuse: reentrancy and nested runs")
struct ThreadBoundMisuseTests {
    @Test("sync and run on a value from inside its own body throw .reentrantAccess; another value's work runs inline")
    func reentrancy() async throws {
        let thread = try LongThread(name: "lt-bound-reenter")
        let value = try await ThreadBound(on: thread) { 1 }
        let other = try await ThreadBound(on: thread) { 10 }
        let outcome = try await value.run { (number: inout Int) -> [String] in
            var seen: [String] = []
            do { _ = try value.sync { $0 } } catch { seen.append("\(error)") }
            let current = number
            seen.append("other: \((try? other.sync { $0 += current; return $0 }) ?? -1)")
            try? value.perform { $0 += 100 } // queued: runs after this body
            number += 1
            return seen
        }
        #expect(outcome == [LongThreadError.reentrantAccess.description, "other: 11"])
        #expect(try await value.run { $0 } == 102)
        await thread.stopAndWait()
    }

    @Test("a body that runs the loop nested: a perform for the same value waits for it, a waiting caller gets .reentrantAccess")
    func nestedRun() async throws {
        let thread = try LongThread(name: "lt-bound-nested")
        let value = try await ThreadBound(on: thread) { [String]() }
        let inNested = Latch()
        let syncOutcome = Recorder<String>()
        let log = try await value.run { (entries: inout [String]) -> [String] in
            entries.append("body starts")
            try? value.perform { $0.append("performed") }
            // From another thread, while this body holds the value: the nested run reaches it.
            Thread {
                inNested.wait()
                do { try value.sync { $0.append("synced") } } catch { syncOutcome.record("\(error)") }
                // The nested run checks its condition after each item: one more item lets it see
                // the outcome (the refusal reached this thread after the loop had checked).
                try? thread.perform {}
            }.start()
            inNested.countDown()
            let ended = try? LongThread.current!.runNested(in: .default, until: .now + .seconds(10)) { syncOutcome.count == 0 }
            entries.append(ended == true ? "body ends" : "body ends at the deadline")
            return entries
        }
        #expect(log == ["body starts", "body ends"])
        #expect(syncOutcome.events == [LongThreadError.reentrantAccess.description])
        #expect(try await value.run { $0 } == ["body starts", "body ends", "performed"])
        await thread.stopAndWait()
    }

    @Test("a value bound by setUp that then throws is destroyed on the thread")
    func boundBySetUp() throws {
        let log = Recorder<String>()
        let bound = Recorder<ThreadBound<Probe>>()
        #expect(throws: LongThreadError.setUpFailed(MakeFailed())) {
            _ = try LongThread(name: "lt-bound-setup", options: .init(setUp: {
                bound.record(try ThreadBound(on: LongThread.current!) { Probe(log: log) })
                throw MakeFailed()
            }))
        }
        let events = log.events
        #expect(events.count == 2)
        #expect(events.first?.replacingOccurrences(of: "made", with: "destroyed") == events.last)
        #expect(throws: LongThreadError.stopped) { try bound.events[0].sync { $0.count } }
    }
}

extension LongThread {
    /// Stops without holding a thread of the cooperative pool.
    fileprivate func stopAndWait() async {
        stop(waitUntilDone: false)
        await waitUntilExit()
    }
}
