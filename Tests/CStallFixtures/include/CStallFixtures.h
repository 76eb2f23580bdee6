// A small C library for the stall monitor's tests: a wait reached through C frames of our own,
// compiled with frame pointers, as a C library a LongThread calls into would be.
#ifndef CSTALLFIXTURES_H
#define CSTALLFIXTURES_H

#include <stdint.h>

/// What `select(2)` returned, and errno when it failed.
typedef struct {
    int result;
    int error;
    int isReadable;
} CStallFixtures_SelectResult;

/// Waits until `fd` is readable, through `fixture_middle` and `select(2)`, with no timeout and no
/// retry: an interrupted select returns -1 and EINTR, which the caller sees.
CStallFixtures_SelectResult fixture_outer(int fd);

/// Called by `fixture_outer`: calls `select(2)` on `fd` alone.
CStallFixtures_SelectResult fixture_middle(int fd);

/// An address in the code of the image holding `exported` (a function it exports) that no symbol
/// covers (padding or a function it does not export), found from `exported` on with dladdr1's
/// symbol sizes; 0 if none is found. `imageBase` receives the image's load address.
uintptr_t fixture_unnamed_code_address(const void *exported, uintptr_t *imageBase);

#endif
