#ifndef CTHREADAFFINEFIXTURE_H
#define CTHREADAFFINEFIXTURE_H

#include <stdint.h>

/// A fake thread-affine C library, as Tcl's interpreter is: made, used and deleted on one thread.
/// `CThreadAffineFixture_create` records the calling thread (its pthread_t and its kernel thread
/// id, so that a recycled pthread_t does not pass for the right thread); every call and
/// `CThreadAffineFixture_destroy` check the calling thread against it and count violations,
/// where the real library would abort or corrupt its state. Thread-safe to call from anywhere:
/// the counters are atomic, so that a violation is counted, not raced.
typedef struct CThreadAffineFixture_Library CThreadAffineFixture_Library;

typedef struct {
    /// Calls made (on the right thread or not), destroy excluded.
    int64_t calls;
    /// Calls and destroys made on another thread than the creator's, or after destroy.
    int64_t violations;
    /// Whether destroy ran, and whether it ran on the creator's thread.
    int32_t destroyed;
    int32_t destroyedOnThread;
} CThreadAffineFixture_Stats;

/// Makes a library bound to the calling thread.
CThreadAffineFixture_Library *CThreadAffineFixture_create(void);
/// One call: returns `value + 1`, counting a violation off the creator's thread or after destroy.
int64_t CThreadAffineFixture_call(CThreadAffineFixture_Library *library, int64_t value);
/// Deletes the library's state (the memory stays until `free`, so that its stats can be read).
void CThreadAffineFixture_destroy(CThreadAffineFixture_Library *library);
/// What happened to `library` so far.
CThreadAffineFixture_Stats CThreadAffineFixture_stats(const CThreadAffineFixture_Library *library);
/// Frees the bookkeeping, from any thread, once the test has read it.
void CThreadAffineFixture_free(CThreadAffineFixture_Library *library);

#endif
