import CSQLiteBench
import Glibc

/// The SQLite example's store reduced to what the workload does, with the example's settings:
/// a file in WAL mode, `synchronous=NORMAL`, opened `SQLITE_OPEN_NOMUTEX` (one caller at a
/// time: each contender provides that its own way), an upsert and a lookup by primary key.
struct Store: ~Copyable {
    private let database: OpaquePointer
    private let upsert: OpaquePointer
    private let lookup: OpaquePointer

    init(path: String) {
        for suffix in ["", "-wal", "-shm"] { unlink(path + suffix) }
        var handle: OpaquePointer?
        Self.check(sqlite3_open_v2(path, &handle, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nil))
        database = handle!
        Self.check(sqlite3_exec(database, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"
            + "CREATE TABLE kv(key TEXT PRIMARY KEY, value TEXT NOT NULL)", nil, nil, nil))
        upsert = Self.prepare(database, "INSERT OR REPLACE INTO kv(key, value) VALUES(?1, ?2)")
        lookup = Self.prepare(database, "SELECT value FROM kv WHERE key = ?1")
    }

    deinit {
        sqlite3_finalize(upsert)
        sqlite3_finalize(lookup)
        sqlite3_close_v2(database)
    }

    /// One operation of the workload: writes `key`, then reads it back. Returns the value's length.
    mutating func operate(key: String) -> Int {
        CSQLiteBench_bindText(upsert, 1, key)
        CSQLiteBench_bindText(upsert, 2, key)
        Self.check(sqlite3_step(upsert), expecting: SQLITE_DONE)
        sqlite3_reset(upsert)
        CSQLiteBench_bindText(lookup, 1, key)
        Self.check(sqlite3_step(lookup), expecting: SQLITE_ROW)
        let length = Int(sqlite3_column_bytes(lookup, 0))
        sqlite3_reset(lookup)
        return length
    }

    private static func prepare(_ database: OpaquePointer, _ sql: String) -> OpaquePointer {
        var statement: OpaquePointer?
        check(sqlite3_prepare_v2(database, sql, -1, &statement, nil))
        return statement!
    }

    private static func check(_ result: Int32, expecting expected: Int32 = SQLITE_OK) {
        precondition(result == expected, "sqlite-bench: SQLite returned \(result), expected \(expected)")
    }
}
