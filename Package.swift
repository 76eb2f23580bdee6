// swift-tools-version:6.0
import PackageDescription

// The core (LongThreads) depends on the toolchain alone; integrations with other packages get
// their own targets and products so that `import LongThreads` never pulls them in.
let package = Package(
    name: "LongThread",
    products: [
        .library(name: "LongThreads", targets: ["LongThreads"]),
        .executable(name: "longthread-demo", targets: ["LongThreadDemo"]),
    ],
    targets: [
        // MARK: - Core
        .target(
            name: "CLongThreadsShims",
            path: "Sources/CLongThreadsShims"
        ),
        .target(
            name: "LongThreads",
            dependencies: ["CLongThreadsShims"],
            path: "Sources/LongThreads"
        ),

        // MARK: - Examples
        .executableTarget(
            name: "LongThreadDemo",
            dependencies: ["LongThreads"],
            path: "Examples/Demo"
        ),

        // MARK: - Tests
        .testTarget(
            name: "LongThreadsTests",
            dependencies: ["LongThreads", "CLongThreadsShims"],
            path: "Tests/LongThreadsTests"
        ),
    ],
    swiftLanguageModes: [.v6]
)
