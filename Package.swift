// swift-tools-version:6.1
import PackageDescription

let strictness: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

/// How release builds of the `hub` executable (and of `hub-bench`, whose in-process benchmarks then
/// run as `hub serve` does) are linked on Linux, for a smaller footprint (the idle-RSS target of
/// `hub serve`, README "Benchmarks"):
/// - `-static-stdlib`: the Swift runtime and Foundation are linked in, so only the code the hub
///   uses is loaded, instead of every shared library's relocations and neighbouring pages;
/// - lld with `-z pack-relative-relocs` (DT_RELR, glibc 2.36 or newer): the executable stays
///   position-independent (ASLR) while its relocation table shrinks from ~2 MB to ~30 KB.
/// The static archives Foundation needs are named because the objects were compiled against the
/// shared modules, whose autolink entries leave them out (`swift build --static-swift-stdlib`
/// would recompile every module instead). Debug builds (and the tests) keep the default dynamic
/// linking, which links faster.
let releaseLinking: [LinkerSetting] = [
    .unsafeFlags(
        [
            "-static-stdlib", "-use-ld=lld", "-Xlinker", "-z", "-Xlinker", "pack-relative-relocs",
            "-lCoreFoundation", "-l_FoundationICU", "-l_FoundationCollections", "-l_FoundationCShims",
        ],
        .when(platforms: [.linux], configuration: .release))
]

let package = Package(
    name: "NotificationHub",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "hub", targets: ["hub"]),
        .executable(name: "hub-bench", targets: ["hub-bench"]),
        .library(name: "HubCore", targets: ["HubCore"]),
        .library(name: "HubTransportKit", targets: ["HubTransportKit"]),
        .library(name: "HubConfig", targets: ["HubConfig"]),
        .library(name: "HubSQLite", targets: ["HubSQLite"]),
        .library(name: "HubServer", targets: ["HubServer"]),
        .library(name: "HubTesting", targets: ["HubTesting"]),
        .library(name: "HubEmulators", targets: ["HubEmulators"]),
        .library(name: "HubEmulatorKit", targets: ["HubEmulatorKit"]),
        .library(name: "HubPolling", targets: ["HubPolling"]),
        .library(name: "HubAPNS", targets: ["HubAPNS"]),
        .library(name: "HubHTTP2", targets: ["HubHTTP2"]),
        .library(name: "HubHTTPSupport", targets: ["HubHTTPSupport"]),
        .library(name: "HubFCM", targets: ["HubFCM"]),
        .library(name: "HubWNS", targets: ["HubWNS"]),
        .library(name: "HubWebPush", targets: ["HubWebPush"]),
        .library(name: "HubUnifiedPush", targets: ["HubUnifiedPush"]),
        .library(name: "HubWebhooks", targets: ["HubWebhooks"]),
        .library(name: "HubPostgres", targets: ["HubPostgres"]),
        .library(name: "HubClient", targets: ["HubClient"]),
        .library(name: "HubCLI", targets: ["HubCLI"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-crypto", from: "4.5.2"),
        .package(url: "https://github.com/apple/swift-certificates", from: "1.21.1"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
        .package(url: "https://github.com/jpsim/Yams", from: "6.2.2"),
        .package(url: "https://github.com/vapor/jwt-kit", from: "5.8.0"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/apple/swift-nio-http2", from: "1.46.0"),
        .package(url: "https://github.com/apple/swift-nio-extras.git", from: "1.35.2"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
    ],
    targets: [
        // The wire vocabulary and resource shapes HubCore and HubClient share (Foundation only).
        .target(name: "HubWire", swiftSettings: strictness),
        .target(
            name: "HubCore",
            dependencies: [
                "HubWire",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: strictness
        ),
        // What a transport needs, public and documented: HubCore re-exported, plus the helpers the
        // first-party transports share. An outside author's transport imports this only
        // (examples/custom-transport, a package of its own, proves it).
        .target(
            name: "HubTransportKit",
            dependencies: [
                "HubCore",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: strictness
        ),
        .target(
            name: "HubConfig",
            dependencies: [
                "HubCore",
                .product(name: "Yams", package: "Yams"),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ],
            swiftSettings: strictness
        ),
        .target(
            name: "HubSQLite",
            dependencies: [
                "HubCore",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
            ],
            swiftSettings: strictness
        ),
        .target(
            name: "HubServer",
            dependencies: [
                // Long-polls and event streams park in the polling plugin's waiting room.
                "HubCore", "HubWire", "HubPolling",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOHTTPTypesHTTP1", package: "swift-nio-extras"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ],
            resources: [.copy("openapi.yaml")],
            swiftSettings: strictness
        ),
        .target(
            name: "HubPolling",
            dependencies: ["HubCore"],
            path: "Plugins/Polling",
            swiftSettings: strictness
        ),
        .target(
            name: "HubAPNS",
            dependencies: [
                "HubCore", "HubTransportKit", "HubHTTPSupport",
                "HubHTTP2",
                "HubEmulatorKit",  // its emulator (Emulator/), `hub emulate apns`
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            path: "Plugins/APNS",
            swiftSettings: strictness
        ),
        .target(
            name: "HubHTTP2",
            dependencies: [
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOTLS", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Sources/HubHTTP2",
            swiftSettings: strictness
        ),
        // What the plugins that call HTTP APIs over AsyncHTTPClient share: the owned client, form
        // bodies, OAuth token requests, and the access-token cache (APNs's provider token too).
        .target(
            name: "HubHTTPSupport",
            dependencies: [
                "HubCore",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ],
            swiftSettings: strictness
        ),
        .target(
            name: "HubFCM",
            dependencies: [
                "HubCore", "HubTransportKit",
                "HubHTTP2",
                "HubHTTPSupport",
                "HubEmulatorKit",  // its emulator (Emulator/), `hub emulate fcm`
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            path: "Plugins/FCM",
            swiftSettings: strictness
        ),
        .target(
            name: "HubWNS",
            dependencies: [
                "HubCore", "HubTransportKit",
                "HubHTTPSupport",
                "HubEmulatorKit",  // its emulator (Emulator/), `hub emulate wns`
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            path: "Plugins/WNS",
            swiftSettings: strictness
        ),
        .target(
            name: "HubWebPush",
            dependencies: [
                "HubCore", "HubTransportKit",
                "HubHTTP2",
                "HubEmulatorKit",  // its emulator (Emulator/), `hub emulate webpush`
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            path: "Plugins/WebPush",
            swiftSettings: strictness
        ),
        // UnifiedPush sends as Web Push does (its client, payloads and RFC 8291 encryption), so it
        // builds on that plugin instead of copying it.
        .target(
            name: "HubUnifiedPush",
            dependencies: [
                "HubCore", "HubWebPush", "HubTransportKit",
                "HubEmulatorKit",  // `hub emulate unifiedpush` (the Web Push emulator as a distributor)
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Plugins/UnifiedPush",
            swiftSettings: strictness
        ),
        .target(
            name: "HubWebhooks",
            dependencies: [
                "HubCore", "HubTransportKit", "HubHTTPSupport",
                "HubEmulatorKit",  // its receiver (Emulator/), `hub emulate webhook`
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            path: "Plugins/Webhooks",
            swiftSettings: strictness
        ),
        .target(
            name: "HubPostgres",
            dependencies: [
                // The wake-up relay connects the waiting rooms of the instances.
                "HubCore", "HubPolling",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: strictness
        ),
        .target(
            name: "HubClient",
            dependencies: ["HubWire"],
            swiftSettings: strictness
        ),
        .target(
            name: "HubTesting",
            dependencies: ["HubCore", "HubPolling", .product(name: "Logging", package: "swift-log")],
            swiftSettings: strictness
        ),
        // What the emulators share (a test CA, TLS servers on loopback, files, the console of
        // `hub emulate`); each plugin's emulator lives in its folder (Plugins/<provider>/Emulator).
        .target(
            name: "HubEmulatorKit",
            dependencies: [
                "HubCore",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: strictness
        ),
        // The emulators in one import for tests and benchmarks: re-exports the plugins' emulator
        // types and HubEmulatorKit, and adds TestUserClaims.
        .target(
            name: "HubEmulators",
            dependencies: [
                "HubEmulatorKit", "HubAPNS", "HubFCM", "HubWNS", "HubWebPush", "HubWebhooks",
                .product(name: "JWTKit", package: "jwt-kit"),
            ],
            swiftSettings: strictness
        ),
        .target(
            name: "HubCLI",
            dependencies: [
                // `serve`, `config check`, `map-app` (its flags and questions) and `emulate` (the
                // plugins' emulators) know the plugins they are given.
                "HubCore", "HubConfig", "HubSQLite", "HubServer", "HubPostgres", "HubPolling",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "JWTKit", package: "jwt-kit"),  // `hub token`
            ],
            swiftSettings: strictness
        ),
        // `hub`: HubCLI with the first-party plugins (Sources/hub/main.swift).
        .executableTarget(
            name: "hub",
            dependencies: [
                "HubCLI", "HubPolling", "HubAPNS", "HubFCM", "HubWNS", "HubWebPush", "HubUnifiedPush", "HubWebhooks",
            ],
            swiftSettings: strictness,
            linkerSettings: releaseLinking
        ),
        // The benchmarks, a separate executable so that the daemon does not ship them. Those that
        // measure `hub serve` run the `hub` executable of the same build folder.
        .executableTarget(
            name: "hub-bench",
            dependencies: [
                "HubCore", "HubConfig", "HubSQLite", "HubPolling", "HubPostgres", "HubAPNS", "HubFCM",
                "HubEmulators", "HubTesting",  // `publish`: in-process long-polls (`Hub.longPoll`)
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                // `hub-bench pipeline`: a throw-away database for its `hub serve` instances.
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "JWTKit", package: "jwt-kit"),
            ],
            swiftSettings: strictness,
            linkerSettings: releaseLinking
        ),
        .testTarget(
            name: "HubCoreTests", dependencies: ["HubCore", "HubTesting", "HubSQLite", "HubPolling"],
            swiftSettings: strictness),
        .testTarget(
            name: "HubConfigTests",
            dependencies: ["HubConfig", "HubEmulators", "HubAPNS", "HubFCM", "HubWNS", "HubPolling", "HubTesting"],
            exclude: ["Fixtures"],
            swiftSettings: strictness
        ),
        .testTarget(
            name: "HubSQLiteTests",
            dependencies: ["HubSQLite", "HubTesting", .product(name: "GRDB", package: "GRDB.swift")],
            swiftSettings: strictness),
        .testTarget(
            name: "HubServerTests",
            dependencies: [
                "HubServer", "HubSQLite", "HubPolling", "HubTesting", "HubConfig",
                "HubEmulators",  // TestUserClaims
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "Yams", package: "Yams"),
            ],
            exclude: ["Fixtures"],
            swiftSettings: strictness
        ),
        .executableTarget(
            name: "device-simulator",
            dependencies: [
                "HubClient",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Crypto", package: "swift-crypto"),  // HMAC-SHA256 of development tokens
            ],
            path: "examples/device-simulator",
            swiftSettings: strictness
        ),
        .testTarget(
            name: "HubAPNSTests",
            dependencies: [
                "HubAPNS", "HubHTTP2", "HubTesting", "HubEmulators", "HubSQLite",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            swiftSettings: strictness),
        .testTarget(
            name: "HubHTTP2Tests",
            dependencies: [
                "HubHTTP2", "HubEmulators", "HubTesting",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ],
            swiftSettings: strictness
        ),
        .testTarget(
            name: "HubHTTPSupportTests", dependencies: ["HubHTTPSupport"], swiftSettings: strictness),
        .testTarget(
            name: "HubFCMTests",
            dependencies: [
                "HubFCM", "HubTesting", "HubEmulators", "HubSQLite", .product(name: "JWTKit", package: "jwt-kit"),
            ], swiftSettings: strictness),
        .testTarget(
            name: "HubWNSTests",
            // AllTransportsTests publishes to polling, APNs, FCM and WNS endpoints of one user.
            dependencies: [
                "HubWNS", "HubFCM", "HubAPNS", "HubPolling", "HubTesting", "HubEmulators", "HubSQLite",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: strictness
        ),
        .testTarget(
            name: "HubWebPushTests",
            dependencies: [
                "HubWebPush", "HubUnifiedPush", "HubTesting", "HubEmulators", "HubConfig",
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strictness
        ),
        .testTarget(
            name: "HubPostgresTests",
            dependencies: [
                "HubPostgres", "HubTesting", "HubSQLite", "HubPolling",
                .product(name: "PostgresNIO", package: "postgres-nio"),
            ],
            swiftSettings: strictness
        ),
        .testTarget(
            name: "HubClientTests",
            dependencies: ["HubClient", "HubServer", "HubSQLite", "HubPolling", "HubTesting", "HubEmulators"],
            swiftSettings: strictness
        ),
        .testTarget(
            name: "HubCLITests",
            dependencies: [
                "hub", "HubCLI", "device-simulator", "HubEmulators", "HubConfig", "HubCore", "HubAPNS", "HubFCM",
                "HubWNS",
                "HubWebPush", "HubUnifiedPush", "HubWebhooks", "HubTesting",
                .product(name: "JWTKit", package: "jwt-kit"), .product(name: "Logging", package: "swift-log"),
                .product(name: "Yams", package: "Yams"),  // DeploymentTests reads compose.yaml
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            swiftSettings: strictness
        ),
    ]
)
