// This module's package dependency is behind the package trait "Metrics" (off by default, so that a
// package using LongThreads alone fetches nothing else): without it, say so instead of failing
// on the import.
#if !Metrics
#error("LongThreadsMetrics needs the package trait \"Metrics\": .package(url: …, branch: \"main\", traits: [\"Metrics\"]); in this repository: swift build --enable-all-traits")
#endif
