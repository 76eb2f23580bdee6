// swift-tools-version:6.1
import PackageDescription

// SwiftPM names a path dependency after its folder, so the library's identity is whatever the
// clone's folder is called ("main" here, something else in a CI checkout).
let libraryIdentity = Context.packageDirectory
    .split(separator: "/").dropLast().last.map { $0.lowercased() } ?? "main"

// A package of its own, so that the library itself keeps no dependency on SwiftNIO.
let package = Package(
    name: "LongThreadBenchmarks",
    products: [
        .executable(name: "longthread-bench", targets: ["LongThreadBench"]),
        .executable(name: "longthread-postcost", targets: ["LongThreadPostCost"]),
        .executable(name: "sqlite-bench", targets: ["SQLiteBench"]),
    ],
    dependencies: [
        .package(path: "../", traits: ["Tracing"]),  // LongThreadsTracing, for the propagation figures
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.0"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-distributed-tracing.git", from: "1.1.0"),
        // package-benchmark: the regression suite CI checks against Benchmarks/Thresholds. Its
        // MallocInterposer trait counts mallocs without jemalloc (and leaves its other default
        // trait, RuntimeInterposer, off: that package is not needed).
        .package(url: "https://github.com/ordo-one/benchmark", from: "1.38.1", traits: ["MallocInterposer"]),
    ],
    targets: [
        // What Swift cannot reach through Glibc: syscall(SYS_futex), gettid, CPU affinity masks,
        // per-thread CPU clocks, mallinfo2, and the malloc counter (see bench_support.c).
        .target(name: "CBenchSupport", path: "Sources/CBenchSupport"),
        .executableTarget(
            name: "LongThreadBench",
            dependencies: [
                "CBenchSupport",
                .product(name: "LongThreads", package: libraryIdentity),
                .product(name: "LongThreadsTracing", package: libraryIdentity),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Sources/LongThreadBench"
        ),
        // Instruction counts of the async post path under callgrind (see README).
        .executableTarget(
            name: "LongThreadPostCost",
            dependencies: [.product(name: "LongThreads", package: libraryIdentity)],
            path: "Sources/LongThreadPostCost"
        ),
        // The SQLite example's workload through a LongThread-bound value, an actor and a serial
        // queue (see README, "SQLite"). libsqlite3-dev, as for the example.
        .systemLibrary(name: "CSQLiteBench", path: "Sources/CSQLiteBench", providers: [.apt(["libsqlite3-dev"])]),
        .executableTarget(
            name: "SQLiteBench",
            dependencies: ["CSQLiteBench", .product(name: "LongThreads", package: libraryIdentity)],
            path: "Sources/SQLiteBench"
        ),
        // The package-benchmark suite (`swift package benchmark`; see README, "Regression suite").
        // The plugin finds a suite by its folder's parent being named Benchmarks.
        .executableTarget(
            name: "LongThreadRegression",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "LongThreads", package: libraryIdentity),
            ],
            path: "Benchmarks/LongThreadRegression",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        // The harness's own checks (`swift test` here; the library's CI does not build the benchmark).
        .testTarget(
            name: "LongThreadBenchTests",
            dependencies: ["LongThreadBench"],
            path: "Tests/LongThreadBenchTests"
        ),
    ],
    swiftLanguageModes: [.v6]
)
