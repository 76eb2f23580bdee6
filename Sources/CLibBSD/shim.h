// libbsd: pidfile(3) and setproctitle(3) for the daemon example (apt: libbsd-dev).
#include <bsd/libutil.h>
#include <bsd/unistd.h>

// Swift cannot call C variadic functions such as setproctitle(fmt, ...): this passes one string
// through "%s", so a title is never read as a format.
static inline void CLibBSD_setproctitle(const char *title) {
    setproctitle("%s", title);
}
