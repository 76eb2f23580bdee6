// SQLite (Debian's libsqlite3-dev) for sqlite-bench. A module of its own: module names must be
// unique in a package graph, and the library's SQLite example has `CSQLite`.
#include <sqlite3.h>

// SQLITE_TRANSIENT (a cast of -1 to a function pointer) cannot be imported into Swift.
static inline int CSQLiteBench_bindText(sqlite3_stmt *statement, int index, const char *text) {
    return sqlite3_bind_text(statement, index, text, -1, SQLITE_TRANSIENT);
}
