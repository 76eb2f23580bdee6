// This module's package dependency is behind the package trait "Tools" (off by default, so that a
// package using LongThreads alone fetches nothing else): without it, say how to build instead of
// failing on the import.
#if !Tools
#error("longthread-stress needs the package trait \"Tools\": swift build --enable-all-traits (or --traits Tools)")
#endif
