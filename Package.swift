// swift-tools-version:6.0
import PackageDescription

// The core (LongThreads) depends on the toolchain alone; integrations with other packages get
// their own targets and products so that `import LongThreads` never pulls them in.
let package = Package(
    name: "LongThread",
    products: [
        .library(name: "LongThreads", targets: ["LongThreads"]),
        .library(name: "LongThreadsServiceLifecycle", targets: ["LongThreadsServiceLifecycle"]),
        .library(name: "LongThreadsLogging", targets: ["LongThreadsLogging"]),
        .library(name: "LongThreadsMetrics", targets: ["LongThreadsMetrics"]),
        .library(name: "LongThreadsTracing", targets: ["LongThreadsTracing"]),
        .executable(name: "longthread-demo", targets: ["LongThreadDemo"]),
        .executable(name: "longthread-daemon", targets: ["LongThreadDaemon"]),
        .executable(name: "longthread-stress", targets: ["LongThreadStress"]),
        .executable(name: "longthread-sqlite", targets: ["LongThreadSQLite"]),
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

        // MARK: - Integrations
        .target(
            name: "LongThreadsServiceLifecycle",
            dependencies: ["LongThreads", .product(name: "ServiceLifecycle", package: "swift-service-lifecycle")],
            path: "Sources/LongThreadsServiceLifecycle"
        ),
        .target(
            name: "LongThreadsLogging",
            dependencies: ["LongThreads", .product(name: "Logging", package: "swift-log")],
            path: "Sources/LongThreadsLogging"
        ),
        .target(
            name: "LongThreadsMetrics",
            dependencies: ["LongThreads", .product(name: "Metrics", package: "swift-metrics")],
            path: "Sources/LongThreadsMetrics"
        ),
        .target(
            name: "LongThreadsTracing",
            dependencies: [
                "LongThreads",
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "Instrumentation", package: "swift-distributed-tracing"),
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
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            path: "Examples/Daemon/Sources"
        ),
        .systemLibrary(name: "CSQLite", path: "Examples/SQLite/CSQLite", providers: [.apt(["libsqlite3-dev"])]),
        .target(
            name: "SQLiteExample",
            dependencies: [
                "LongThreads", "LongThreadsServiceLifecycle", "CSQLite", "ExampleSupport",
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
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
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            path: "Examples/SQLite/Main"
        ),
        .executableTarget(
            name: "LongThreadStress",
            dependencies: [
                "LongThreads", "CLongThreadsShims",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
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
        .testTarget(
            name: "LongThreadsTests",
            dependencies: ["LongThreads", "CLongThreadsShims", "LongThreadsTestSupport"],
            path: "Tests/LongThreadsTests"
        ),
        .testTarget(
            name: "LongThreadsIntegrationTests",
            dependencies: [
                "LongThreadsServiceLifecycle", "LongThreadsLogging", "LongThreadsMetrics", "LongThreadsTracing",
                "LongThreadsTestSupport",
                .product(name: "InMemoryTracing", package: "swift-distributed-tracing"),
                .product(name: "ServiceLifecycleTestKit", package: "swift-service-lifecycle"),
                .product(name: "MetricsTestKit", package: "swift-metrics"),
            ],
            path: "Tests/LongThreadsIntegrationTests",
            // README's snippets are compiled here: one that warns must fail the build.
            swiftSettings: [.unsafeFlags(["-warnings-as-errors"])]
        ),
        .testTarget(
            name: "ExamplesTests",
            dependencies: [
                "AFNetworkingExample", "WeexExample", "DaemonExample", "SQLiteExample", "ExampleSupport",
                "LongThreadsTestSupport",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            path: "Tests/ExamplesTests"
        ),
    ],
    swiftLanguageModes: [.v6]
)
