import ArgumentParser
import Foundation
import LocgateCommandSupport
import LocationAuthorization
import LocationGateService
import Logging
import PostgresClient

/// `locgate apps create NAME`.
struct AppsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "apps", abstract: "Manage apps.", subcommands: [Create.self])

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Create an app and print its admin key.")
        @OptionGroup var database: DatabaseOptions
        @Argument(help: "The app's name") var name: String

        func run() async throws {
            let created = try await withService(database) { try await $0.catalog.createApp(name: name, actor: .cli) }
            try printJSON([
                "appId": created.appID.uuidString.lowercased(), "name": name, "apiKey": created.apiKey,
                "keyId": created.keyID.uuidString.lowercased(),
            ])
        }
    }
}

/// `locgate keys create --app ID --scope SCOPE`, `locgate keys list --app ID`.
struct KeysCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "keys", abstract: "Manage API keys.", subcommands: [Create.self, List.self])

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Create a key for an app and print it.")
        @OptionGroup var database: DatabaseOptions
        @Option(help: "The app id") var app: String
        @Option(help: "ingest, read or admin") var scope: String
        @Flag(help: "An ingest key bound to devices: its events need a device token signed with the token secret printed once") var deviceBound = false

        func validate() throws {
            guard UUID(uuidString: app) != nil else { throw ValidationError("--app must be an app id (a UUID)") }
            guard KeyScope(rawValue: scope) != nil else { throw ValidationError("--scope must be ingest, read or admin") }
            guard !deviceBound || scope == "ingest" else { throw ValidationError("--device-bound needs --scope ingest") }
        }

        func run() async throws {
            guard let appID = UUID(uuidString: app), let keyScope = KeyScope(rawValue: scope) else { return }
            let created = try await withService(database) { [deviceBound] service in
                try await requireApp(appID, in: service, "no key was created")
                return try await service.catalog.createKey(appID: appID, scope: keyScope, deviceBound: deviceBound, actor: .cli)
            }
            var printed = ["id": created.id.uuidString.lowercased(), "scope": scope, "key": created.key]
            if let secret = created.tokenSecret { printed["tokenSecret"] = secret }
            try printJSON(printed)
        }
    }

    /// Prints the app's live keys as `GET /v1/keys` answers them: never a key or its hash.
    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List an app's live keys: id, scope, deviceBound, createdAt, lastUsedAt, prefix.")
        @OptionGroup var database: DatabaseOptions
        @Option(help: "The app id") var app: String

        func validate() throws {
            guard UUID(uuidString: app) != nil else { throw ValidationError("--app must be an app id (a UUID)") }
        }

        func run() async throws {
            guard let appID = UUID(uuidString: app) else { return }
            let keys = try await withService(database) { service in
                try await requireApp(appID, in: service, "it has no keys to list")
                return try await service.catalog.listKeys(appID: appID)
            }
            struct Keys: Encodable { var keys: [APIKeys.Listing] }
            try printJSON(Keys(keys: keys))
        }
    }
}

/// `locgate features put KEY --app ID --requires always --service regionMonitoring`, and
/// `locgate features preview` with the same options (`FeatureDefinitionOptions.swift`);
/// `locgate features disable KEY --app ID` and `enable`, which change only `disabled`.
struct FeaturesCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "features", abstract: "Manage the feature catalog.",
        subcommands: [Put.self, Preview.self, Disable.self, Enable.self])

    /// Replaces the whole feature, as `PUT /v1/features/{key}` does: a field not given takes
    /// its default. `disable` and `enable` change the kill switch alone.
    struct Put: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Create a feature, or replace it whole: fields not given take their defaults.",
            discussion: """
                Replaces the whole feature: every field not given here (description, services, \
                minAppVersion, delivery, background, the kill switch) takes its default. To turn a \
                feature off or on and change nothing else, use `locgate features disable KEY` or \
                `locgate features enable KEY`.
                """)
        @OptionGroup var database: DatabaseOptions
        @Argument(help: "The feature key") var key: String
        @Option(help: "The app id") var app: String
        @OptionGroup var definition: FeatureDefinitionOptions

        func validate() throws {
            guard UUID(uuidString: app) != nil else { throw ValidationError("--app must be an app id (a UUID)") }
        }

        func run() async throws {
            guard let appID = UUID(uuidString: app) else { return }
            let feature = try definition.feature(key: key)
            let created = try await withService(database) { service in
                try await requireApp(appID, in: service, "no feature was put")
                return try await service.catalog.putFeature(appID: appID, feature: feature, actor: .cli)
            }
            FileHandle.standardError.write(Data((created ? "created\n" : "replaced\n").utf8))
            try printJSON(feature)
        }
    }
}

extension FeaturesCommand {
    /// `locgate features disable KEY --app ID`: SPEC §15's kill switch on, nothing else of the
    /// feature changed (a merge patch of `disabled` alone, `FeatureCatalog.setDisabled`).
    struct Disable: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Turn a feature off for every device (the kill switch); nothing else of it changes.")
        @OptionGroup var database: DatabaseOptions
        @Argument(help: "The feature key") var key: String
        @Option(help: "The app id") var app: String

        func validate() throws {
            try FeaturesCommand.validateSwitch(app: app, key: key)
        }

        func run() async throws {
            try await FeaturesCommand.setDisabled(true, key: key, app: app, database: database)
        }
    }

    /// `locgate features enable KEY --app ID`: the kill switch off again, nothing else changed.
    struct Enable: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Turn a feature's kill switch off (the gate decides again); nothing else of it changes.")
        @OptionGroup var database: DatabaseOptions
        @Argument(help: "The feature key") var key: String
        @Option(help: "The app id") var app: String

        func validate() throws {
            try FeaturesCommand.validateSwitch(app: app, key: key)
        }

        func run() async throws {
            try await FeaturesCommand.setDisabled(false, key: key, app: app, database: database)
        }
    }

    static func validateSwitch(app: String, key: String) throws {
        guard UUID(uuidString: app) != nil else { throw ValidationError("--app must be an app id (a UUID)") }
        do {
            try ClientText.checkKey(key, field: "key", bytes: 1...64)
        } catch {
            throw ValidationError(error.message)
        }
    }

    /// Sets the feature's `disabled` alone, recorded with actor `{"cli": true}` as
    /// `featureDisabled`/`featureEnabled` (`featurePut` when it was so already), and prints the
    /// whole feature. An unknown app or feature fails, non-zero.
    static func setDisabled(_ disabled: Bool, key: String, app: String, database: DatabaseOptions) async throws {
        guard let appID = UUID(uuidString: app) else { return }
        let feature = try await withService(database) { service in
            try await requireApp(appID, in: service, "nothing was changed")
            guard let feature = try await service.catalog.setFeatureDisabled(disabled, appID: appID, key: key, actor: .cli) else {
                throw ServiceError(.notFound, "no feature \(key) in app \(appID.uuidString.lowercased()): nothing was changed")
            }
            return feature
        }
        try printJSON(feature)
    }
}
