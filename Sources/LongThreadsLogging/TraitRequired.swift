// This module's package dependency is behind the package trait "Logging" (off by default, so that a
// package using LongThreads alone fetches nothing else): without it, say so instead of failing
// on the import.
#if !Logging
#error("LongThreadsLogging needs the package trait \"Logging\": .package(url: …, branch: \"main\", traits: [\"Logging\"]); in this repository: swift build --enable-all-traits")
#endif
