// swift-tools-version:6.1
import PackageDescription

// A transport the hub does not ship, as a package of its own: what an outside author writes. It
// sees the hub's public API only (its products, by path here; by URL in an author's package), so it
// compiling and its tests passing are the proof that the public API is enough (CI builds and tests
// it: .ci/run, "custom transport").
let strictness: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

let package = Package(
    name: "custom-transport",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "CustomTransportExample", targets: ["CustomTransportExample"]),
        .executable(name: "webhook-hub", targets: ["webhook-hub"]),
    ],
    dependencies: [
        // The hub. An author's package names it by URL instead:
        // .package(url: "https://github.com/your-org/notificationhub", from: "1.0.0")
        .package(name: "NotificationHub", path: "../.."),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-crypto", from: "4.5.2"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
    ],
    targets: [
        // The transport and its plugin: HubTransportKit (the hub's public API for transports) and
        // an HTTP client.
        .target(
            name: "CustomTransportExample",
            dependencies: [
                .product(name: "HubTransportKit", package: "NotificationHub"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ],
            swiftSettings: strictness
        ),
        // The author's own `hub`: the hub's command line (HubCLI) with the first-party plugins and
        // this one.
        .executableTarget(
            name: "webhook-hub",
            dependencies: [
                "CustomTransportExample",
                .product(name: "HubCLI", package: "NotificationHub"),
                .product(name: "HubPolling", package: "NotificationHub"),
                .product(name: "HubAPNS", package: "NotificationHub"),
                .product(name: "HubFCM", package: "NotificationHub"),
                .product(name: "HubWNS", package: "NotificationHub"),
                .product(name: "HubWebPush", package: "NotificationHub"),
                .product(name: "HubUnifiedPush", package: "NotificationHub"),
                .product(name: "HubWebhooks", package: "NotificationHub"),
            ],
            swiftSettings: strictness
        ),
        .testTarget(
            name: "CustomTransportExampleTests",
            dependencies: [
                "CustomTransportExample",
                "webhook-hub",  // built before the tests, which run it as `hub serve`
                .product(name: "HubTransportKit", package: "NotificationHub"),
                .product(name: "HubTesting", package: "NotificationHub"),
                .product(name: "HubEmulators", package: "NotificationHub"),  // TestUserClaims
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: strictness
        ),
    ]
)
