import ArgumentParser
import Foundation
import LocgateCommandSupport
import LocationAuthorization
import LocationGateService

/// A feature's definition as `locgate features put` and `features preview` take it: the body of
/// `PUT /v1/features/{key}` as options, read and checked by the same code as the API's
/// (`FeatureCatalog.parseDefinition`), so that the command line refuses what the API refuses.
struct FeatureDefinitionOptions: ParsableArguments {
    /// SPEC §15's kill switch: `--disabled` or `--enabled` (the default).
    enum Switch: String, EnumerableFlag {
        case disabled
        case enabled

        static func help(for value: Switch) -> ArgumentHelp? {
            switch value {
            case .disabled:
                return "Turn the feature off for every device (the kill switch: reason disabledByOperator); `put` replaces the whole feature, `features disable KEY` changes only this"
            case .enabled: return "Let the gate decide (the default)"
            }
        }
    }

    @Option(help: "whenInUse or always") var requires: String
    @Option(name: .customLong("service"), help: "A service the feature uses (repeatable)") var services: [String] = []
    @Option(help: "any or full") var accuracy = "any"
    @Option(help: "What the feature does") var description: String?
    @Flag var state: Switch?
    @Option(name: .customLong("min-app-version"), help: "The oldest appVersion the feature works in: 1 to 4 dot-separated numbers, such as 5.2")
    var minAppVersion: String?

    /// The feature `key` these options define; a `ValidationError` naming the field otherwise.
    func feature(key: String) throws -> Feature {
        struct Definition: Encodable {
            var requires: String
            var services: [String]
            var accuracy: String
            var description: String?
            var disabled: Bool
            var minAppVersion: String?
        }
        let body = try JSONEncoder().encode(Definition(
            requires: requires, services: services, accuracy: accuracy, description: description, disabled: state == .disabled,
            minAppVersion: minAppVersion))
        do {
            return try FeatureCatalog.parseDefinition(key: key, body: body)
        } catch {
            throw ValidationError(error.message)
        }
    }
}

extension FeaturesCommand {
    /// `locgate features preview KEY --app ID ...` (the options of `put`): prints what putting
    /// the feature would change for the app's devices now, changing nothing (SPEC §15).
    struct Preview: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print what putting a feature would change for the app's devices now, as JSON; nothing is changed.")
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
            let preview = try await withService(database) { service in
                try await requireApp(appID, in: service, "nothing to preview")
                return try await service.catalog.previewFeature(appID: appID, feature: feature)
            }
            try printJSON(preview)
        }
    }
}
