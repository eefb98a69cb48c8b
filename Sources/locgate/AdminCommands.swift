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
            let created = try await withService(database) { try await $0.apps.create(name: name) }
            try printJSON(["appId": created.appID.uuidString.lowercased(), "name": name, "apiKey": created.apiKey])
        }
    }
}

/// `locgate keys create --app ID --scope SCOPE`.
struct KeysCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "keys", abstract: "Manage API keys.", subcommands: [Create.self])

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
                try await $0.keys.create(appID: appID, scope: keyScope, deviceBound: deviceBound)
            }
            var printed = ["id": created.id.uuidString.lowercased(), "scope": scope, "key": created.key]
            if let secret = created.tokenSecret { printed["tokenSecret"] = secret }
            try printJSON(printed)
        }
    }
}

/// `locgate features put KEY --app ID --requires always --service regionMonitoring`.
struct FeaturesCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "features", abstract: "Manage the feature catalog.", subcommands: [Put.self])

    struct Put: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Create or replace a feature.")
        @OptionGroup var database: DatabaseOptions
        @Argument(help: "The feature key") var key: String
        @Option(help: "The app id") var app: String
        @Option(help: "whenInUse or always") var requires: String
        @Option(name: .customLong("service"), help: "A service the feature uses (repeatable)") var services: [String] = []
        @Option(help: "any or full") var accuracy = "any"
        @Option(help: "What the feature does") var description: String?

        func validate() throws {
            guard UUID(uuidString: app) != nil else { throw ValidationError("--app must be an app id (a UUID)") }
        }

        func run() async throws {
            guard let appID = UUID(uuidString: app) else { return }
            struct Definition: Encodable {
                var requires: String
                var services: [String]
                var accuracy: String
                var description: String?
            }
            let body = try JSONEncoder().encode(Definition(requires: requires, services: services, accuracy: accuracy, description: description))
            let feature: Feature
            do {
                feature = try FeatureCatalog.parseDefinition(key: key, body: body)
            } catch {
                throw ValidationError(error.message)
            }
            let created = try await withService(database) { try await $0.features.put(appID: appID, feature: feature) }
            FileHandle.standardError.write(Data((created ? "created\n" : "replaced\n").utf8))
            try printJSON(feature)
        }
    }
}
