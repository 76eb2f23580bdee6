import CSQLite

/// A failed SQLite call: its result code and SQLite's message.
public struct SQLiteError: Error, Equatable, CustomStringConvertible {
    /// SQLite's (extended) result code.
    public var code: Int32
    /// SQLite's message for it.
    public var message: String

    init(code: Int32, connection: OpaquePointer?) {
        self.code = code
        message = connection.flatMap { sqlite3_errmsg($0) }.map { String(cString: $0) }
            ?? String(cString: sqlite3_errstr(code))
    }

    init(code: Int32, message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "SQLite error \(code): \(message)" }
}
