// SQLite, from Debian's libsqlite3-dev, for the SQLite example. Only the example links it: the
// LongThreads core never does.
#include <sqlite3.h>

// SQLITE_TRANSIENT is a cast of -1 to a function pointer, which Swift cannot import: SQLite then
// copies the text before the call returns, so a Swift string's temporary buffer may go.
static inline int CSQLite_bindText(sqlite3_stmt *statement, int index, const char *text) {
    return sqlite3_bind_text(statement, index, text, -1, SQLITE_TRANSIENT);
}
