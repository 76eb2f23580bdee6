// Built with frame pointers (Package.swift), never inlined, and with work after each call so that
// no call becomes a tail call: each function keeps a frame of its own on the stack.
#define _GNU_SOURCE
#include "CStallFixtures.h"

#include <dlfcn.h>
#include <link.h>

#include <errno.h>
#include <stddef.h>
#include <sys/select.h>

__attribute__((noinline)) CStallFixtures_SelectResult fixture_middle(int fd) {
    fd_set readable;
    FD_ZERO(&readable);
    FD_SET(fd, &readable);
    CStallFixtures_SelectResult outcome;
    outcome.result = select(fd + 1, &readable, NULL, NULL, NULL);
    outcome.error = outcome.result < 0 ? errno : 0;
    outcome.isReadable = outcome.result > 0 && FD_ISSET(fd, &readable);
    return outcome;
}

__attribute__((noinline)) CStallFixtures_SelectResult fixture_outer(int fd) {
    volatile int depth = 1;
    CStallFixtures_SelectResult outcome = fixture_middle(fd);
    outcome.result += depth - 1;
    return outcome;
}

uintptr_t fixture_unnamed_code_address(const void *exported, uintptr_t *imageBase) {
    uintptr_t address = (uintptr_t)exported;
    for (int step = 0; step < 100000; step++) {
        Dl_info info;
        const ElfW(Sym) *symbol = NULL;
        if (dladdr1((void *)address, &info, (void **)&symbol, RTLD_DL_SYMENT) == 0) return 0;
        *imageBase = (uintptr_t)info.dli_fbase;
        if (symbol == NULL || info.dli_saddr == NULL) return address;
        uintptr_t end = (uintptr_t)info.dli_saddr + symbol->st_size;
        if (address >= end) return address;
        address = end;
    }
    return 0;
}
