#define _GNU_SOURCE
#include "CThreadAffineFixture.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

struct CThreadAffineFixture_Library {
    pthread_t owner;
    pid_t ownerTID;
    _Atomic int64_t calls;
    _Atomic int64_t violations;
    _Atomic int32_t destroyed;
    _Atomic int32_t destroyedOnThread;
};

static pid_t currentTID(void) {
    return (pid_t)syscall(SYS_gettid);
}

/// Both must match: a pthread_t is reused once its thread is joined, a kernel id once it exits.
static int onOwnerThread(const CThreadAffineFixture_Library *library) {
    return pthread_equal(library->owner, pthread_self()) && library->ownerTID == currentTID();
}

CThreadAffineFixture_Library *CThreadAffineFixture_create(void) {
    CThreadAffineFixture_Library *library = calloc(1, sizeof *library);
    if (library == NULL) return NULL;
    library->owner = pthread_self();
    library->ownerTID = currentTID();
    return library;
}

int64_t CThreadAffineFixture_call(CThreadAffineFixture_Library *library, int64_t value) {
    atomic_fetch_add(&library->calls, 1);
    if (!onOwnerThread(library) || atomic_load(&library->destroyed)) atomic_fetch_add(&library->violations, 1);
    return value + 1;
}

void CThreadAffineFixture_destroy(CThreadAffineFixture_Library *library) {
    int onThread = onOwnerThread(library);
    if (!onThread || atomic_load(&library->destroyed)) atomic_fetch_add(&library->violations, 1);
    atomic_store(&library->destroyedOnThread, onThread);
    atomic_store(&library->destroyed, 1);
}

CThreadAffineFixture_Stats CThreadAffineFixture_stats(const CThreadAffineFixture_Library *library) {
    CThreadAffineFixture_Stats stats;
    stats.calls = atomic_load(&library->calls);
    stats.violations = atomic_load(&library->violations);
    stats.destroyed = atomic_load(&library->destroyed);
    stats.destroyedOnThread = atomic_load(&library->destroyedOnThread);
    return stats;
}

void CThreadAffineFixture_free(CThreadAffineFixture_Library *library) {
    free(library);
}
