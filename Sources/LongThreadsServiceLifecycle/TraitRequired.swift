// This module's package dependency is behind the package trait "ServiceLifecycle" (off by default, so that a
// package using LongThreads alone fetches nothing else): without it, say so instead of failing
// on the import.
#if !ServiceLifecycle
#error("LongThreadsServiceLifecycle needs the package trait \"ServiceLifecycle\": .package(url: …, branch: \"main\", traits: [\"ServiceLifecycle\"]); in this repository: swift build --enable-all-traits")
#endif
