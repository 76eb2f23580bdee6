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
        #expect(second.names == first.names)
        // Each event reaches "a" and then "b" before the next event reaches anyone.
        let expected = first.names.flatMap { ["a:\($0)", "b:\($0)"] }
        #expect(order.events == expected)
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
