import ArgumentParser
import Foundation
import LocgateCommandSupport
import LocationGateHTTP
import LocationGateService

/// `locgate analytics prompts --app ID --group-by platform --format csv`; the kinds are the API's
/// (`/v1/analytics/{kind}`), `location-button` included (SPEC §12).
struct AnalyticsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "analytics",
        abstract: "Grant rates, escalations, statuses, Settings changes (SPEC §6) and the location button's counts (SPEC §12).")

    @OptionGroup var database: DatabaseOptions
    @Argument(help: "prompts, statuses, escalations, settings or location-button") var kind: String
    @Option(help: "The app id") var app: String
    @Option(name: .customLong("group-by"), help: "Comma-separated: day or week, platform, osMajor, appVersion") var groupBy: String?
    @Option(help: "From this day (RFC 3339 time or YYYY-MM-DD, inclusive, UTC)") var from: String?
    @Option(help: "To this day (inclusive)") var to: String?
    @Option(help: "json or csv") var format = "json"
    @Option(help: "Only this platform (iOS, android, ... or unknown)") var platform: String?

    func validate() throws {
        guard AnalyticsQuery.Kind(rawValue: kind) != nil else { throw ValidationError("kind must be " + AnalyticsQuery.Kind.names) }
        guard UUID(uuidString: app) != nil else { throw ValidationError("--app must be an app id (a UUID)") }
        guard format == "json" || format == "csv" else { throw ValidationError("--format must be json or csv") }
    }

    func run() async throws {
        guard let kind = AnalyticsQuery.Kind(rawValue: kind), let appID = UUID(uuidString: app) else { return }
        let query: AnalyticsQuery
        do {
            query = try AnalyticsQuery.parse(kind: kind, appID: appID, groupBy: groupBy, from: from, to: to, platform: platform)
        } catch {
            throw ValidationError(error.message)
        }
        let rows = try await withService(database) { service in
            try await requireApp(appID, in: service, "it has no analytics")
            return try await service.analytics.analytics(query)
        }
        if format == "csv" {
            FileHandle.standardOutput.write(Data(AnalyticsFormat.csv(rows, kind: kind, groupBy: query.groupBy).utf8))
        } else {
            FileHandle.standardOutput.write(AnalyticsFormat.json(rows) + Data("\n".utf8))
        }
    }
}
