import LongThreads
import Testing

@Suite("Instruments")
struct InstrumentTests {
    @Test("a multiplex instrument hands every event to each instrument, in the order given")
    func multiplex() throws {
        let first = EventRecorder()
        let second = EventRecorder()
        let order = Recorder<String>()
        let instrument = MultiplexInstrument(
            Tagged(tag: "a", log: order), first, Tagged(tag: "b", log: order), second
        )
        let thread = try LongThread(name: "lt-multiplex", options: .init(instrument: instrument))
        try thread.sync {}
        thread.stop()

        #expect(first.names.first == "started")
        #expect(first.names.last == "stopped")
        #expect(first.names.contains("batch"))
        // Events come from two threads (stopRequested from the caller, the rest from the loop), so
        // instruments may see them interleaved differently; each sees every event once.
        #expect(second.names.sorted() == first.names.sorted())
        let heardBy = { (tag: String) in order.events.filter { $0.hasPrefix("\(tag):") }.map { $0.dropFirst(2) } }
        #expect(heardBy("a").sorted() == first.names.sorted().map { Substring($0) })
        #expect(heardBy("b").sorted() == heardBy("a").sorted())
        // Each event reaches "a" before "b": at every point "b" has heard no event more often than "a".
        var heard: [String: Int] = [:]
        for entry in order.events {
            heard[entry, default: 0] += 1
            if entry.hasPrefix("b:") {
                let name = entry.dropFirst(2)
                #expect(heard["b:\(name)", default: 0] <= heard["a:\(name)", default: 0], "\(entry) before a:\(name)")
            }
        }
    }
}

/// Logs "tag:event" for each event it hears.
private struct Tagged: LongThreadInstrument {
    let tag: String
    let log: Recorder<String>

    func record(_ event: LongThreadEvent) {
        log.record("\(tag):\(event.name)")
    }
}
