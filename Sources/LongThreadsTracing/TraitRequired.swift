// This module's package dependency is behind the package trait "Tracing" (off by default, so that a
// package using LongThreads alone fetches nothing else): without it, say so instead of failing
// on the import.
#if !Tracing
#error("LongThreadsTracing needs the package trait \"Tracing\": .package(url: …, branch: \"main\", traits: [\"Tracing\"]); in this repository: swift build --enable-all-traits")
#endif
