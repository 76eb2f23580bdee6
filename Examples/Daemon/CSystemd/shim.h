// libsystemd's sd_notify(3) and sd_watchdog_enabled(3) for the daemon example (apt: libsystemd-dev).
// Only the daemon example links it: the LongThreads core never does.
#include <systemd/sd-daemon.h>
