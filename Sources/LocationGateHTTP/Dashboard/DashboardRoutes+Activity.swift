import Foundation
import Hummingbird
import LocationGateService

/// The Activity page (SPEC §14): the app's admin audit trail as a table, newest first, 100
/// entries a page with a link to older ones (`?before=<id>`, an entry's opaque id), and a CSV link as every table
/// has. Its texts (an app's name in `appCreated`'s details among them) are escaped by the
/// templates as every page's are.
extension DashboardRoutes {
    /// Entries per page of the Activity page.
    static let activityPageSize = 100

    @Sendable func activity(_ request: Request, context: AppRequestContext, caller: APIIdentity) async throws -> Response {
        try await page(request, caller) { identity, _ in
            let before = try QueryParameters(of: request)["before"].flatMap { UUID(uuidString: $0) }
            let trail = try await adminAudit.recentEntries(
                appID: identity.appID, before: before, limit: Self.activityPageSize)
            let table = DashboardTable(
                id: "activity", title: "Changes to the app's configuration, newest first",
                columns: ["at", "action", "by", "target", "details"],
                rows: trail.entries.map(Self.activityRow))
            var result = DashboardPage(
                template: .activity, title: "Activity", active: "/dashboard/activity", filters: nil, groupChoices: [],
                sections: [.init(chart: .empty, table: table)])
            result.older = trail.next.map { "/dashboard/activity?before=\($0.uuidString.lowercased())" }
            return result
        }
    }

    /// One entry as a row: who made the change as words, the details as named fields in name
    /// order (one a line on the page, `name: value, name: value` in the CSV).
    static func activityRow(_ entry: AuditEntry) -> [DashboardTable.Cell] {
        let actor: String
        switch entry.actor {
        case .key(let id): actor = "key \(id.uuidString.lowercased())"
        case .adminToken: actor = "admin token"
        case .cli: actor = "command line"
        case .guard: actor = "experiment guard"
        }
        let details = entry.details.keys.sorted().map { name in (name: name, text: entry.details[name]?.text ?? "") }
        return [.text(entry.at), .text(entry.action), .text(actor), .text(entry.target ?? ""), .fields(details)]
    }
}
