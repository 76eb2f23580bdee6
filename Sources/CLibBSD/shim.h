// libbsd: pidfile(3) and setproctitle(3) for the daemon example (apt: libbsd-dev).
#include <bsd/libutil.h>
#include <bsd/unistd.h>
