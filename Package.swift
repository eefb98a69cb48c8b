// swift-tools-version:6.1
import PackageDescription

/// Strict settings as Hummingbird uses them: every existential spelled `any`, imports visible
/// only where they are declared.
let strictSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
]

let package = Package(
    name: "LocationGate",
    // iOS and the other Apple platforms matter to LocationGateClient alone (an app's library);
    // its queue uses Synchronization's Mutex, which needs the 2024 releases.
    platforms: [.macOS(.v15), .iOS(.v18), .macCatalyst(.v18), .tvOS(.v18), .watchOS(.v11), .visionOS(.v2)],
    products: [
        .executable(name: "locgate", targets: ["locgate"]),
        .executable(name: "locgate-bench", targets: ["locgate-bench"]),
        .library(name: "LocationAuthorization", targets: ["LocationAuthorization"]),
        .library(name: "LocationGateClient", targets: ["LocationGateClient"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-log.git", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.80.0"),
        .package(url: "https://github.com/x-sheep/swift-property-based.git", from: "2.0.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.0"),
        .package(url: "https://github.com/apple/swift-crypto.git", from: "3.12.0"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.0.0"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-collections.git", from: "1.1.0"),
        .package(url: "https://github.com/hummingbird-project/swift-mustache.git", from: "2.1.0"),
    ],
    targets: [
        // The JSON reader (`JSONNode`) and writer (`JSONWriter`) of the forms stored on every
        // append and read back on every replay: Foundation's coders were most of that cost.
        // Also the calendar's day count (`CivilCalendar`) that the domain's RFC 3339 reader and
        // the PostgreSQL client's timestamps share: this target depends on nothing, so both
        // may import it.
        .target(
            name: "LocationGateJSON",
            swiftSettings: strictSettings
        ),
        // Layer 0: the authorization domain. Standard library, Foundation and the JSON forms
        // only, no I/O.
        .target(
            name: "LocationAuthorization",
            dependencies: ["LocationGateJSON"],
            swiftSettings: strictSettings
        ),
        // The fuzz target's body (Labs/fuzz builds it with libFuzzer; the tests replay its corpus).
        .target(
            name: "LocationAuthorizationFuzzing",
            dependencies: ["LocationAuthorization"],
            swiftSettings: strictSettings
        ),
        // The app-side library (SPEC §10): records events, keeps them in a durable on-disk queue,
        // delivers them exactly once. Foundation and the domain only, so that it builds for apps.
        .target(
            name: "LocationGateClient",
            dependencies: ["LocationAuthorization"],
            swiftSettings: strictSettings
        ),
        // Layer 1: libpq, declared once.
        .systemLibrary(
            name: "CLibPQ",
            pkgConfig: "libpq",
            providers: [.apt(["libpq-dev"])]
        ),
        // Layer 2: a small PostgreSQL client over libpq.
        .target(
            name: "PostgresClient",
            dependencies: [
                "CLibPQ", "LocationGateJSON",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: strictSettings
        ),
        // The SQL migrations of Schema/migrations, carried by the binary as Swift source
        // (Migrations+Embedded.swift, written by Deploy/generate): no resource bundle.
        .target(
            name: "LocationGateSchema",
            path: "Schema",
            exclude: ["README.md", "migrations"],
            swiftSettings: strictSettings
        ),
        // Layer 3: the append-only event log, streams, global order, subscriptions.
        .target(
            name: "EventLog",
            dependencies: [
                "PostgresClient",
                "LocationGateSchema",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strictSettings
        ),
        // Layer 4: the gating service without HTTP: projection, cache, keys, features, gates.
        .target(
            name: "LocationGateService",
            dependencies: [
                "LocationAuthorization", "LocationGateJSON", "EventLog", "PostgresClient", "LocationGateSchema",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "DequeModule", package: "swift-collections"),
            ],
            swiftSettings: strictSettings
        ),
        // Layer 5: the HTTP API (SPEC §5) and OFREP on Hummingbird.
        .target(
            name: "LocationGateHTTP",
            dependencies: [
                "LocationGateService", "LocationAuthorization", "LocationGateJSON", "EventLog", "PostgresClient",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "Mustache", package: "swift-mustache"),
            ],
            exclude: ["Dashboard/Templates"],
            swiftSettings: strictSettings
        ),
        // The seeded synthetic population of `locgate simulate` (demos, benchmarks, tests):
        // events made and checked with the domain's reducer, no I/O.
        .target(
            name: "LocationGateSimulation",
            dependencies: ["LocationAuthorization"],
            swiftSettings: strictSettings
        ),
        // What the two command-line tools share: database options, logging, JSON output.
        .target(
            name: "LocgateCommandSupport",
            dependencies: [
                "LocationGateService", "PostgresClient", "EventLog",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strictSettings
        ),
        // The command-line tool and server.
        .executableTarget(
            name: "locgate",
            dependencies: [
                "EventLog", "LocationGateService", "LocationGateHTTP", "LocgateCommandSupport", "LocationGateSimulation",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                "PostgresClient",
                "LocationAuthorization",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strictSettings
        ),
        // The benchmarks' in-process halves and the least server of single-event ingest: a
        // lab (Labs/), kept out of the product binary.
        .executableTarget(
            name: "locgate-bench",
            dependencies: [
                "EventLog", "LocationGateService", "LocgateCommandSupport", "PostgresClient", "LocationAuthorization",
                "LocationGateJSON", "LocationGateSimulation",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strictSettings
        ),
        // Test helpers that need no database: waiting for a condition, a manual clock,
        // temporary directories, child processes. The unit test targets depend on this alone.
        .target(
            name: "LocationGateTestKit",
            swiftSettings: strictSettings
        ),
        // The integration tests' harness: a fresh migrated database per test process, real
        // `locgate serve` processes; it brings the kit along.
        .target(
            name: "LocationGateTestSupport",
            dependencies: [
                "LocationGateTestKit", "EventLog", "PostgresClient", "LocationGateSchema",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "LocationAuthorizationTests",
            dependencies: [
                "LocationAuthorization", "LocationAuthorizationFuzzing", "LocationGateJSON",
                .product(name: "PropertyBased", package: "swift-property-based"),
            ],
            exclude: ["FuzzCorpus"],
            swiftSettings: strictSettings
        ),
        // Unit tests: every test target whose name ends in `UnitTests` (and the domain's,
        // LocationAuthorizationTests) needs no database. `Deploy/test --unit` runs them by that
        // name with LOCGATE_DATABASE_URL unset, so one that reached a database would fail; the
        // other test targets are the integration tests, against a real PostgreSQL.
        .testTarget(
            name: "PostgresClientUnitTests",
            dependencies: ["PostgresClient"],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "EventLogUnitTests",
            dependencies: ["EventLog", "PostgresClient"],
            swiftSettings: strictSettings
        ),
        // The service's state machines (group commit's queue and attempts), the cache's packed
        // states, stored outcomes, device tokens, the push streams' share of reads.
        .testTarget(
            name: "LocationGateServiceUnitTests",
            dependencies: [
                "LocationGateService", "LocationAuthorization", "EventLog", "LocationGateSimulation", "LocationGateTestKit",
                "PostgresClient", .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: strictSettings
        ),
        // The wire formats (the event batch reader, the hand-written JSON), API-key parsing,
        // request metrics, cached readings, stream slots.
        .testTarget(
            name: "LocationGateHTTPUnitTests",
            dependencies: [
                "LocationGateHTTP", "LocationGateService", "LocationAuthorization", "LocationGateJSON", "LocationGateSimulation",
                "LocationGateTestKit",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "MetricsTestKit", package: "swift-metrics"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
            ],
            swiftSettings: strictSettings
        ),
        // The client's queue, sender and recorder against scripted transports.
        .testTarget(
            name: "LocationGateClientUnitTests",
            dependencies: ["LocationGateClient", "LocationAuthorization", "LocationGateTestKit"],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "LocationGateSimulationUnitTests",
            dependencies: ["LocationGateSimulation", "LocationAuthorization"],
            swiftSettings: strictSettings
        ),
        // Integration tests, against a real PostgreSQL.
        .testTarget(
            name: "LocationGateHTTPTests",
            dependencies: [
                "LocationGateHTTP", "LocationGateService", "LocationAuthorization", "EventLog", "PostgresClient",
                "LocationGateTestSupport", "LocationGateJSON",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "MetricsTestKit", package: "swift-metrics"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
            ],
            swiftSettings: strictSettings
        ),
        // The service without HTTP: group commit, the cache and its coherence, replay, the
        // archive, the counts kept at append time.
        .testTarget(
            name: "LocationGateServiceTests",
            dependencies: [
                "LocationGateService", "LocationAuthorization", "EventLog", "PostgresClient", "LocationGateTestSupport",
                "LocationGateSimulation",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "LocationGateClientTests",
            dependencies: [
                "LocationGateClient", "LocationAuthorization", "LocationGateTestSupport", "PostgresClient",
                // DeviceToken.sign: what an app's backend does, for the device-bound key's test.
                "LocationGateService",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "PostgresClientTests",
            dependencies: ["PostgresClient", "LocationGateTestSupport", .product(name: "Logging", package: "swift-log")],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "EventLogTests",
            dependencies: [
                "EventLog", "PostgresClient", "LocationGateSchema", "LocationGateTestSupport",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strictSettings
        ),
    ]
)
