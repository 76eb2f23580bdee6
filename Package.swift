// swift-tools-version:6.1
import PackageDescription

// The core (LongThreads) depends on the toolchain alone; integrations with other packages get
// their own targets and products so that `import LongThreads` never pulls them in.
//
// Each integration's package dependency is behind a package trait, off by default: a package that
// depends on LongThreads alone resolves and fetches nothing else (SwiftPM skips a dependency that
// only trait-gated target dependencies use while those traits are off). A user of an integration
// enables its trait: `.package(url: …, branch: "main", traits: ["Logging"])`. This repository's
// own build enables them all: `swift build --enable-all-traits` (scripts/test.sh, .ci/run).

/// A target dependency on `product` of `package`, used only while `trait` is enabled.
func gated(_ product: String, _ package: String, trait: String) -> Target.Dependency {
    .product(name: product, package: package, condition: .when(traits: [trait]))
}
let package = Package(
    name: "LongThread",
    products: [
        .library(name: "LongThreads", targets: ["LongThreads"]),
        .library(name: "LongThreadsServiceLifecycle", targets: ["LongThreadsServiceLifecycle"]),
        .library(name: "LongThreadsLogging", targets: ["LongThreadsLogging"]),
        .library(name: "LongThreadsMetrics", targets: ["LongThreadsMetrics"]),
        .library(name: "LongThreadsTracing", targets: ["LongThreadsTracing"]),
        .library(name: "LongThreadsTestKit", targets: ["LongThreadsTestKit"]),
        .executable(name: "longthread-demo", targets: ["LongThreadDemo"]),
        .executable(name: "longthread-daemon", targets: ["LongThreadDaemon"]),
        .executable(name: "longthread-stress", targets: ["LongThreadStress"]),
        .executable(name: "longthread-sqlite", targets: ["LongThreadSQLite"]),
    ],
    traits: [
        .trait(name: "ServiceLifecycle", description: "LongThreadsServiceLifecycle (swift-service-lifecycle)"),
        .trait(name: "Logging", description: "LongThreadsLogging (swift-log)"),
        .trait(name: "Metrics", description: "LongThreadsMetrics (swift-metrics)"),
        .trait(name: "Tracing", description: "LongThreadsTracing (swift-distributed-tracing)"),
        .trait(
            name: "Integrations",
            description: "All four integration products",
            enabledTraits: ["ServiceLifecycle", "Logging", "Metrics", "Tracing"]
        ),
        .trait(
            name: "Tools",
            description: "longthread-stress and the daemon example (swift-argument-parser); this repository's own",
            enabledTraits: ["ServiceLifecycle", "Logging"]
        ),
        .default(enabledTraits: []),
    ],
    dependencies: [
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.6.0"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.5.0"),
        .package(url: "https://github.com/apple/swift-distributed-tracing.git", from: "1.1.0"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.5.0"),
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.4.0"),
    ],
    targets: [
        // MARK: - Core
        .target(name: "CLongThreadsShims", path: "Sources/CLongThreadsShims"),
        .target(name: "LongThreads", dependencies: ["CLongThreadsShims"], path: "Sources/LongThreads"),

        // The test kit: virtual time, a stepped loop, faults on demand. On the core alone, so no trait.
        .target(name: "LongThreadsTestKit", dependencies: ["LongThreads"], path: "Sources/LongThreadsTestKit"),

        // MARK: - Integrations
        .target(
            name: "LongThreadsServiceLifecycle",
            dependencies: ["LongThreads", gated("ServiceLifecycle", "swift-service-lifecycle", trait: "ServiceLifecycle")],
            path: "Sources/LongThreadsServiceLifecycle"
        ),
        .target(
            name: "LongThreadsLogging",
            dependencies: ["LongThreads", gated("Logging", "swift-log", trait: "Logging")],
            path: "Sources/LongThreadsLogging"
        ),
        .target(
            name: "LongThreadsMetrics",
            dependencies: ["LongThreads", gated("Metrics", "swift-metrics", trait: "Metrics")],
            path: "Sources/LongThreadsMetrics"
        ),
        .target(
            name: "LongThreadsTracing",
            dependencies: [
                "LongThreads",
                gated("Tracing", "swift-distributed-tracing", trait: "Tracing"),
                gated("Instrumentation", "swift-distributed-tracing", trait: "Tracing"),
            ],
            path: "Sources/LongThreadsTracing"
        ),

        // MARK: - Examples
        .target(name: "ExampleSupport", path: "Examples/Support"),
        .target(name: "AFNetworkingExample", dependencies: ["LongThreads", "ExampleSupport"], path: "Examples/AFNetworking", exclude: ["README.md"]),
        .target(name: "WeexExample", dependencies: ["LongThreads", "ExampleSupport"], path: "Examples/Weex", exclude: ["README.md"]),
        .systemLibrary(name: "CLibBSD", path: "Sources/CLibBSD", providers: [.apt(["libbsd-dev"])]),
        .systemLibrary(name: "CSystemd", path: "Examples/Daemon/CSystemd", providers: [.apt(["libsystemd-dev"])]),
        .target(
            name: "DaemonExample",
            dependencies: [
                "LongThreads", "LongThreadsServiceLifecycle", "LongThreadsLogging", "CLibBSD", "CSystemd", "ExampleSupport",
                gated("ArgumentParser", "swift-argument-parser", trait: "Tools"),
                gated("Logging", "swift-log", trait: "Logging"),
                gated("ServiceLifecycle", "swift-service-lifecycle", trait: "ServiceLifecycle"),
            ],
            path: "Examples/Daemon/Sources"
        ),
        .systemLibrary(name: "CSQLite", path: "Examples/SQLite/CSQLite", providers: [.apt(["libsqlite3-dev"])]),
        .target(
            name: "SQLiteExample",
            dependencies: [
                "LongThreads", "LongThreadsServiceLifecycle", "CSQLite", "ExampleSupport",
                gated("ServiceLifecycle", "swift-service-lifecycle", trait: "ServiceLifecycle"),
            ],
            path: "Examples/SQLite/Sources"
        ),

        // MARK: - Executables
        .executableTarget(
            name: "LongThreadDemo",
            dependencies: ["LongThreads", "AFNetworkingExample", "WeexExample"],
            path: "Examples/Demo",
            // Top-level code, as in README: an `await` that picks a blocking overload must fail.
            swiftSettings: [.unsafeFlags(["-warnings-as-errors"])]
        ),
        .executableTarget(name: "LongThreadDaemon", dependencies: ["DaemonExample"], path: "Examples/Daemon/Main"),
        .executableTarget(
            name: "LongThreadSQLite",
            dependencies: [
                "SQLiteExample", "LongThreads",
                gated("Logging", "swift-log", trait: "Logging"),
                gated("ServiceLifecycle", "swift-service-lifecycle", trait: "ServiceLifecycle"),
            ],
            path: "Examples/SQLite/Main"
        ),
        .executableTarget(
            name: "LongThreadStress",
            dependencies: [
                "LongThreads", "CLongThreadsShims",
                gated("ArgumentParser", "swift-argument-parser", trait: "Tools"),
            ],
            path: "Sources/LongThreadStress"
        ),

        // MARK: - Tests
        // Latches, recorders and the process census the test targets share; not a product.
        .target(
            name: "LongThreadsTestSupport",
            dependencies: ["LongThreads", "CLongThreadsShims"],
            path: "Tests/LongThreadsTestSupport"
        ),
        // A fake thread-affine C library (as Tcl's interpreter): records and checks the calling thread.
        .target(name: "CThreadAffineFixture", path: "Tests/CThreadAffineFixture"),
        // A C library with frames of its own for the stall monitor's tests: a wait reached through C.
        .target(
            name: "CStallFixtures",
            path: "Tests/CStallFixtures",
            cSettings: [.unsafeFlags(["-fno-omit-frame-pointer", "-fno-optimize-sibling-calls"])]
        ),
        .testTarget(
            name: "LongThreadsTests",
            dependencies: [
                "LongThreads", "CLongThreadsShims", "LongThreadsTestSupport", "CThreadAffineFixture", "CStallFixtures",
            ],
            path: "Tests/LongThreadsTests"
        ),
        .testTarget(
            name: "LongThreadsTestKitTests",
            dependencies: ["LongThreadsTestKit", "LongThreadsTestSupport"],
            path: "Tests/LongThreadsTestKitTests"
        ),
        .testTarget(
            name: "LongThreadsIntegrationTests",
            dependencies: [
                "LongThreadsServiceLifecycle", "LongThreadsLogging", "LongThreadsMetrics", "LongThreadsTracing",
                "LongThreadsTestSupport", "LongThreadsTestKit",
                gated("InMemoryTracing", "swift-distributed-tracing", trait: "Tracing"),
                gated("ServiceLifecycleTestKit", "swift-service-lifecycle", trait: "ServiceLifecycle"),
                gated("MetricsTestKit", "swift-metrics", trait: "Metrics"),
            ],
            path: "Tests/LongThreadsIntegrationTests",
            // README's snippets are compiled here: one that warns must fail the build.
            swiftSettings: [.unsafeFlags(["-warnings-as-errors"])]
        ),
        .testTarget(
            name: "ExamplesTests",
            dependencies: [
                "AFNetworkingExample", "WeexExample", "DaemonExample", "SQLiteExample", "ExampleSupport",
                "LongThreadsTestSupport", "LongThreadsTestKit",
                gated("Logging", "swift-log", trait: "Logging"),
                gated("ServiceLifecycle", "swift-service-lifecycle", trait: "ServiceLifecycle"),
            ],
            path: "Tests/ExamplesTests"
        ),
    ],
    swiftLanguageModes: [.v6]
)
