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
            let created = try await withService(database) { try await $0.apps.create(name: name, actor: .cli) }
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
            let created = try await withService(database) { [deviceBound] in
                try await $0.keys.create(appID: appID, scope: keyScope, deviceBound: deviceBound, actor: .cli)
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
            let keys = try await withService(database) { try await $0.keys.list(appID: appID) }
            struct Keys: Encodable { var keys: [APIKeys.Listing] }
            try printJSON(Keys(keys: keys))
        }
    }
}

/// `locgate features put KEY --app ID --requires always --service regionMonitoring`, and
/// `locgate features preview` with the same options (`FeatureDefinitionOptions.swift`).
struct FeaturesCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "features", abstract: "Manage the feature catalog.", subcommands: [Put.self, Preview.self])

    struct Put: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Create or replace a feature.")
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
            let created = try await withService(database) { try await $0.features.put(appID: appID, feature: feature, actor: .cli) }
            FileHandle.standardError.write(Data((created ? "created\n" : "replaced\n").utf8))
            try printJSON(feature)
        }
    }
}
