import Foundation
import LongThreads

/// An instrument that records the names of the events it hears.
final class EventRecorder: LongThreadInstrument, @unchecked Sendable {
    private let lock = NSLock()
    private var recorded: [LongThreadEvent] = []

    func record(_ event: LongThreadEvent) {
        lock.withLock { recorded.append(event) }
    }

    var events: [LongThreadEvent] { lock.withLock { recorded } }

    var names: [String] { events.map(\.name) }
}

extension LongThreadEvent {
    /// The case's name, for comparing event sequences.
    var name: String {
        switch self {
        case .started: "started"
        case .stopRequested: "stopRequested"
        case .stopped: "stopped"
        case .batch: "batch"
        case .wokeUp: "wokeUp"
        case .stall: "stall"
        }
    }
}
