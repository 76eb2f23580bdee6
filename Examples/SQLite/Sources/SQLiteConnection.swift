import CSQLite
import Glibc

/// One SQLite connection, opened with `SQLITE_OPEN_NOMUTEX`: SQLite then takes no lock of its
/// own, and the connection and its statements must be used by one thread at a time. The store
/// keeps it on one LongThread through a `ThreadBound`, which makes that hold by construction:
/// opened there, used there, closed there.
///
/// Noncopyable: there is one connection, closed once, by `deinit`. Not `Sendable`.
public struct SQLiteConnection: ~Copyable {
    private let database: OpaquePointer
    private let upsert: OpaquePointer
    private let lookup: OpaquePointer
    private let counter: OpaquePointer
    /// The thread that opened it. Each call checks it runs there: the rule `SQLITE_OPEN_NOMUTEX`
    /// leaves to the caller, checked here so that a test sees it kept.
    private let opener = pthread_self()
    private let onClose: (@Sendable (_ onOpeningThread: Bool) -> Void)?

    /// Opens (or creates) the database at `path` in WAL mode with a `kv(key, value)` table.
    ///
    /// - Parameters:
    ///   - path: The file; `":memory:"` for a private database in memory.
    ///   - onClose: Told, when the connection closes, whether it closes on the thread that opened it.
    /// - Throws: ``SQLiteError`` when SQLite cannot open the file or prepare the statements.
    public init(path: String, onClose: (@Sendable (_ onOpeningThread: Bool) -> Void)? = nil) throws(SQLiteError) {
        var handle: OpaquePointer?
        let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX
        let opened = sqlite3_open_v2(path, &handle, flags, nil)
        guard opened == SQLITE_OK, let database = handle else {
            let error = SQLiteError(code: opened, connection: handle)
            sqlite3_close_v2(handle)
            throw error
        }
        var statements: [OpaquePointer] = []
        do throws(SQLiteError) {
            try Self.execute(database, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA busy_timeout=5000;"
                + "CREATE TABLE IF NOT EXISTS kv(key TEXT PRIMARY KEY, value TEXT NOT NULL)")
            for sql in ["INSERT OR REPLACE INTO kv(key, value) VALUES(?1, ?2)",
                        "SELECT value FROM kv WHERE key = ?1", "SELECT count(*) FROM kv"] {
                statements.append(try Self.prepare(database, sql))
            }
        } catch {
            for statement in statements { sqlite3_finalize(statement) }
            sqlite3_close_v2(database)
            throw error
        }
        self.database = database
        (upsert, lookup, counter) = (statements[0], statements[1], statements[2])
        self.onClose = onClose
    }

    deinit {
        for statement in [upsert, lookup, counter] { sqlite3_finalize(statement) }
        sqlite3_close_v2(database)
        onClose?(pthread_equal(opener, pthread_self()) != 0)
    }

    /// Stores `value` under `key`, replacing what was there.
    public mutating func put(_ value: String, for key: String) throws(SQLiteError) {
        try checkThread()
        defer { sqlite3_reset(upsert) }
        try bind(key, at: 1, in: upsert)
        try bind(value, at: 2, in: upsert)
        try step(upsert, expecting: SQLITE_DONE)
    }

    /// The value stored under `key`, or nil.
    public func value(for key: String) throws(SQLiteError) -> String? {
        try checkThread()
        defer { sqlite3_reset(lookup) }
        try bind(key, at: 1, in: lookup)
        let result = sqlite3_step(lookup)
        if result == SQLITE_DONE { return nil }
        guard result == SQLITE_ROW else { throw SQLiteError(code: result, connection: database) }
        return sqlite3_column_text(lookup, 0).map { String(cString: $0) }
    }

    /// How many keys the store holds.
    public func count() throws(SQLiteError) -> Int {
        try checkThread()
        defer { sqlite3_reset(counter) }
        try step(counter, expecting: SQLITE_ROW)
        return Int(sqlite3_column_int64(counter, 0))
    }

    /// Counts from 1 to `limit` in SQL, the slow way (a recursive query): a slow statement for the
    /// stall monitor to catch, with SQLite's frames on the stack.
    public func countSlowly(to limit: Int) throws(SQLiteError) -> Int {
        try checkThread()
        let statement = try Self.prepare(
            database, "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < ?1) SELECT count(*) FROM c")
        defer { sqlite3_finalize(statement) }
        sqlite3_bind_int64(statement, 1, Int64(limit))
        try step(statement, expecting: SQLITE_ROW)
        return Int(sqlite3_column_int64(statement, 0))
    }

    // MARK: - Steps

    private func checkThread() throws(SQLiteError) {
        guard pthread_equal(opener, pthread_self()) != 0 else {
            throw SQLiteError(code: SQLITE_MISUSE, message: "a NOMUTEX connection used off the thread that opened it")
        }
    }

    private func bind(_ text: String, at index: Int32, in statement: OpaquePointer) throws(SQLiteError) {
        let result = CSQLite_bindText(statement, index, text)
        guard result == SQLITE_OK else { throw SQLiteError(code: result, connection: database) }
    }

    private func step(_ statement: OpaquePointer, expecting expected: Int32) throws(SQLiteError) {
        let result = sqlite3_step(statement)
        guard result == expected else { throw SQLiteError(code: result, connection: database) }
    }

    private static func execute(_ database: OpaquePointer, _ sql: String) throws(SQLiteError) {
        let result = sqlite3_exec(database, sql, nil, nil, nil)
        guard result == SQLITE_OK else { throw SQLiteError(code: result, connection: database) }
    }

    private static func prepare(_ database: OpaquePointer, _ sql: String) throws(SQLiteError) -> OpaquePointer {
        var statement: OpaquePointer?
        let result = sqlite3_prepare_v2(database, sql, -1, &statement, nil)
        guard result == SQLITE_OK, let statement else { throw SQLiteError(code: result, connection: database) }
        return statement
    }
}
