// libsystemd's sd_notify(3) and sd_watchdog_enabled(3) for the daemon example (apt: libsystemd-dev).
// Only the daemon example links it: the LongThreads core never does.
#include <systemd/sd-daemon.h>
// glibc's malloc_trim(3), which Swift's Glibc module leaves out: the socket server gives the
// memory of large reply buffers back to the system once their clients are gone.
#include <malloc.h>
