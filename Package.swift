// swift-tools-version: 6.1
import CompilerPluginSupport
import PackageDescription

// scripts/fuzz sets OPENCOREDATA_FUZZ to libFuzzer's library without `main` (with its own build
// path): the implementation and the fuzzers are then compiled with libFuzzer's coverage
// instrumentation and the fuzzers linked with that library; their own `main` runs libFuzzer.
// (`swift build --sanitize=fuzzer` would link libFuzzer into the @Managed macro's plug-in too.)
let fuzzLibrary = Context.environment["OPENCOREDATA_FUZZ"]
let fuzzInstrumentation: [SwiftSetting] = fuzzLibrary == nil ? [] : [.unsafeFlags(["-sanitize=fuzzer"])]
let fuzzerSettings: [SwiftSetting] = fuzzLibrary == nil ? [] : [.unsafeFlags(["-sanitize=fuzzer"]), .define("FUZZING")]
// .ci/run sets OPENCOREDATA_UNOPTIMIZED_SUITE: its optimized build then compiles the main test
// suite's own code without optimization, which saves minutes of optimizing a large module that
// users never run. The code under test, and the porting corpus standing for users' code, stay optimized.
let unoptimizedSuite: [SwiftSetting] = Context.environment["OPENCOREDATA_UNOPTIMIZED_SUITE"] == nil ? [] : [.unsafeFlags(["-Onone"], .when(configuration: .release))]
let fuzzerLinking: [LinkerSetting] = fuzzLibrary.map { [.unsafeFlags(["-Xlinker", $0, "-lstdc++"])] } ?? []

let package = Package(
    name: "OpenCoreData",
    platforms: [.macOS(.v14), .iOS(.v17)],
    products: [
        .library(name: "OpenCoreData", targets: ["OpenCoreData"]),
        .library(name: "OpenCoreDataPostgreSQL", targets: ["OpenCoreDataPostgreSQL"]),
        .executable(name: "worldcup", targets: ["WorldCup"]),
        .executable(name: "ocd-bench", targets: ["OCDBench"]),
        .executable(name: "worldcup-web", targets: ["WorldCupWeb"]),
        .executable(name: "ocd", targets: ["OCDInspector"]),
    ],
    dependencies: [
        .package(url: "https://github.com/groue/GRDB.swift", exact: "7.10.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-collections", from: "1.1.0"),
        .package(url: "https://github.com/swiftlang/swift-syntax", "603.0.0"..<"604.0.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", exact: "2.28.1"),
        .package(url: "https://github.com/hummingbird-project/hummingbird-websocket", exact: "2.8.1"),
        .package(url: "https://github.com/apple/swift-argument-parser", exact: "1.8.2"),
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
        .package(url: "https://github.com/vapor/postgres-nio", exact: "1.33.2"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.81.0"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.25.0"),
    ],
    targets: [
        // The compiler plug-in behind `@Managed`.
        .macro(
            name: "OpenCoreDataMacros",
            dependencies: [
                .product(name: "SwiftSyntaxMacros", package: "swift-syntax"),
                .product(name: "SwiftCompilerPlugin", package: "swift-syntax"),
            ],
            path: "Sources/OpenCoreDataMacros"
        ),
        // The implementation: model, query language, object graph, stores.
        .target(
            name: "OpenCoreDataCore",
            dependencies: [
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "OrderedCollections", package: "swift-collections"),
                "OpenCoreDataMacros",
            ],
            path: "Sources/OpenCoreDataCore",
            swiftSettings: fuzzInstrumentation
        ),
        // The public face: re-exports the implementation so that its names win over Foundation's.
        .target(name: "OpenCoreData", dependencies: ["OpenCoreDataCore"], path: "Sources/OpenCoreData", swiftSettings: fuzzInstrumentation),
        // PostgreSQL through postgres-nio: connections used synchronously from contexts' queues.
        .target(
            name: "OpenCoreDataPostgreSQL",
            dependencies: [
                "OpenCoreData",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Sources/OpenCoreDataPostgreSQL"
        ),
        // The World Cup demo's model classes and commands, shared by the executable and the tests.
        .target(
            name: "WorldCupKit",
            dependencies: ["OpenCoreData", "OpenCoreDataPostgreSQL"],
            path: "Sources/WorldCupKit",
            exclude: ["NOTICE.md"],
            resources: [.copy("Resources/WorldCup.xcdatamodeld"), .copy("Resources/seed.json")]
        ),
        .executableTarget(name: "WorldCup", dependencies: ["WorldCupKit"], path: "Sources/WorldCup"),
        // The live web table and the Failed Banks page: an HTTP and WebSocket server over the
        // World Cup store, as a library so the tests start it in-process.
        .target(
            name: "WorldCupWebKit",
            dependencies: [
                "WorldCupKit", "OpenCoreData",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdWebSocket", package: "hummingbird-websocket"),
            ],
            path: "Sources/WorldCupWebKit",
            exclude: ["Resources/FailedBanks/NOTICE.md"],
            resources: [.copy("Resources/Public"), .copy("Resources/FailedBanks")]
        ),
        .executableTarget(name: "WorldCupWeb", dependencies: ["WorldCupWebKit"], path: "Sources/WorldCupWeb"),
        .executableTarget(
            name: "OCDBench",
            dependencies: ["OpenCoreData", "OpenCoreDataPostgreSQL", .product(name: "GRDB", package: "GRDB.swift"),
                           .product(name: "PostgresNIO", package: "postgres-nio")],
            path: "Sources/OCDBench"
        ),
        // `ocd`, the store inspector: its commands as a library, so the tests run them in-process.
        .target(
            name: "OCDInspectorKit",
            dependencies: [
                "OpenCoreData", "OpenCoreDataCore", "OpenCoreDataPostgreSQL",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "GRDB", package: "GRDB.swift"),
            ],
            path: "Sources/OCDInspectorKit"
        ),
        .executableTarget(name: "OCDInspector", dependencies: ["OCDInspectorKit"], path: "Sources/OCDInspector"),
        // A second process for the remote-change tests: writes to a store with persistent history.
        .executableTarget(name: "HistoryWriter", dependencies: ["OpenCoreData"], path: "Tests/HistoryWriter"),
        // A fresh process for the class-resolution tests: first touches of a store, undefined classes.
        .executableTarget(name: "ClassResolutionProbe", dependencies: ["OpenCoreData", "WorldCupKit"], path: "Tests/ClassResolutionProbe"),
        // The other process of the reliability tests: saves in a loop until killed, or concurrently.
        .executableTarget(name: "ReliabilityWorker", dependencies: ["OpenCoreData", "OpenCoreDataPostgreSQL", "OpenCoreDataTestKit"], path: "Tests/ReliabilityWorker"),
        // The fuzz checks (the parsers' promises on any input), shared by the fuzzers and the tests
        // that replay the inputs fuzzing found.
        .target(name: "OpenCoreDataFuzzing", dependencies: ["OpenCoreData"], path: "Tests/Fuzzing/OpenCoreDataFuzzing", swiftSettings: fuzzerSettings),
        .executableTarget(name: "PredicateFuzzer", dependencies: ["OpenCoreDataFuzzing"], path: "Tests/Fuzzing/PredicateFuzzer",
                          swiftSettings: fuzzerSettings, linkerSettings: fuzzerLinking),
        .executableTarget(name: "ModelXMLFuzzer", dependencies: ["OpenCoreDataFuzzing"], path: "Tests/Fuzzing/ModelXMLFuzzer",
                          swiftSettings: fuzzerSettings, linkerSettings: fuzzerLinking),
        .executableTarget(name: "CompiledModelFuzzer", dependencies: ["OpenCoreDataFuzzing"], path: "Tests/Fuzzing/CompiledModelFuzzer",
                          swiftSettings: fuzzerSettings, linkerSettings: fuzzerLinking),
        // Test helpers shared by the test target and the helper processes.
        .target(name: "OpenCoreDataTestKit", dependencies: ["OpenCoreData", .product(name: "Logging", package: "swift-log")], path: "Tests/OpenCoreDataTestKit"),
        // Linked into the test suite: turns on Core Data's concurrency debugging and installs the
        // test log handler before it starts.
        .target(name: "ConcurrencyDebugOn", path: "Tests/ConcurrencyDebugOn"),
        .testTarget(
            name: "OpenCoreDataTests",
            dependencies: [
                "OpenCoreData", "OpenCoreDataCore", "WorldCupKit", "OCDInspectorKit", "OCDInspector", "HistoryWriter", "ReliabilityWorker", "ClassResolutionProbe", "OpenCoreDataTestKit",
                "OpenCoreDataFuzzing", "ConcurrencyDebugOn", "OpenCoreDataPostgreSQL",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
            ],
            path: "Tests/OpenCoreDataTests",
            exclude: ["Fixtures/NOTICE.md"],
            resources: [.copy("Fixtures"), .copy("Resources/WorldCup.xcdatamodeld")],
            swiftSettings: unoptimizedSuite
        ),
        // Core Data code as it is written for Apple's platforms, in Swift 5 mode, changed only by
        // the README's porting rules (Tests/PortingCorpus/README.md lists each changed line).
        .testTarget(
            name: "PortingCorpusTests",
            dependencies: ["OpenCoreData", "ConcurrencyDebugOn"],
            path: "Tests/PortingCorpus",
            exclude: ["README.md"],
            resources: [.copy("Model/Kennel.xcdatamodeld")],
            swiftSettings: [.swiftLanguageMode(.v5)]
        ),
        .testTarget(
            name: "WorldCupWebTests",
            dependencies: ["WorldCupWebKit", "WorldCupKit", "OpenCoreData", "OpenCoreDataPostgreSQL", "OpenCoreDataTestKit", "ConcurrencyDebugOn",
                           .product(name: "PostgresNIO", package: "postgres-nio")],
            path: "Tests/WorldCupWebTests"
        ),
    ],
    swiftLanguageModes: [.v6]
)
