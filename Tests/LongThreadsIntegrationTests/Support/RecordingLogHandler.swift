import Foundation
import Logging

/// A log handler that keeps every record in memory, for tests.
struct RecordingLogHandler: LogHandler {
    struct Record: Sendable {
        var level: Logger.Level
        var message: String
        var metadata: Logger.Metadata
    }

    /// The records of every handler made from one store, in order.
    final class Store: @unchecked Sendable {
        private let lock = NSLock()
        // Guarded by `lock`.
        private var stored: [Record] = []

        func append(_ record: Record) {
            lock.lock()
            stored.append(record)
            lock.unlock()
        }

        var records: [Record] {
            lock.lock()
            defer { lock.unlock() }
            return stored
        }

        func records(withMessage message: String) -> [Record] {
            records.filter { $0.message == message }
        }

        /// A logger that writes here.
        func logger(label: String = "test") -> Logger {
            Logger(label: label) { _ in RecordingLogHandler(store: self) }
        }
    }

    let store: Store
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace

    init(store: Store) { self.store = store }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        store.append(Record(
            level: event.level,
            message: event.message.description,
            metadata: metadata.merging(event.metadata ?? [:]) { $1 }
        ))
    }
}
