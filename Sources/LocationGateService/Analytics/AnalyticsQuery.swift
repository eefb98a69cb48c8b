import Foundation
import LocationAuthorization
import LocationGateJSON
import PostgresClient

/// The four analytics of SPEC §6 and the location button's of §12, read from the rollups (and,
/// for the status distribution, from the device projection), grouped and filtered.
public struct AnalyticsQuery: Sendable {
    public enum Kind: String, Sendable, CaseIterable {
        case prompts, statuses, escalations, settings
        /// SPEC §12: the location button's event counts (`/v1/analytics/location-button`).
        case locationButton = "location-button"

        /// The kinds as the API's path and the CLI's argument name them, for messages.
        public static var names: String {
            let names = allCases.map(\.rawValue)
            return names.dropLast().joined(separator: ", ") + " or " + (names.last ?? "")
        }
    }

    public enum Dimension: String, Sendable, CaseIterable {
        case day, week, platform, osMajor, appVersion

        var column: String {
            switch self {
            case .day: "day"
            case .week: "date_trunc('week', day)::date"
            case .platform: "platform"
            case .osMajor: "os_major"
            case .appVersion: "app_version"
            }
        }

        /// In `device_states`, where context columns may be NULL.
        var deviceColumn: String? {
            switch self {
            case .day, .week: nil
            case .platform: "coalesce(platform, 'unknown')"
            case .osMajor: "coalesce(os_major, 0)"
            case .appVersion: "coalesce(app_version, 'unknown')"
            }
        }
    }

    public var kind: Kind
    public var appID: UUID
    public var groupBy: [Dimension]
    /// Inclusive, by UTC day of `occurredAt`.
    public var from: Date?
    public var to: Date?
    /// Only this platform's rows (`platform=android`), or every platform.
    public var platform: String?

    public init(kind: Kind, appID: UUID, groupBy: [Dimension] = [], from: Date? = nil, to: Date? = nil, platform: String? = nil) {
        self.kind = kind
        self.appID = appID
        self.groupBy = groupBy
        self.from = from
        self.to = to
        self.platform = platform
    }

    /// Parses `platform`: a platform name (`iOS`, `android`, ...) or `unknown` (devices that
    /// never reported one); anything else is a 400.
    public static func parsePlatform(_ text: String?) throws(ServiceError) -> String? {
        guard let text, !text.isEmpty else { return nil }
        let names = Platform.allCases.map(\.rawValue) + ["unknown"]
        guard names.contains(text) else {
            throw ServiceError(.invalidRequest, "platform: \(text.prefix(32)) is not one of " + names.joined(separator: ", "))
        }
        return text
    }

    /// The platform filter as SQL on a table with a `platform` column (NULL or 'unknown' when
    /// none was reported); empty without a filter.
    private func platformFilter(_ column: String = "platform") -> String {
        guard let platform else { return "" }
        // A platform name from `parsePlatform`: letters only, safe to inline.
        return " AND coalesce(\(column), 'unknown') = '\(platform.filter(\.isLetter))'"
    }

    /// Parses `groupBy=platform,week`; day and week together, or a repeated field, are invalid.
    public static func parseGroupBy(_ text: String?) throws(ServiceError) -> [Dimension] {
        guard let text, !text.isEmpty else { return [] }
        var dimensions: [Dimension] = []
        for name in text.split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces) }) {
            guard let dimension = Dimension(rawValue: name) else {
                throw ServiceError(.invalidRequest, "groupBy: \(name.prefix(32)) is not one of day, week, platform, osMajor, appVersion")
            }
            guard !dimensions.contains(dimension) else { throw ServiceError(.invalidRequest, "groupBy: \(name) twice") }
            dimensions.append(dimension)
        }
        if dimensions.contains(.day) && dimensions.contains(.week) {
            throw ServiceError(.invalidRequest, "groupBy: day or week, not both")
        }
        return dimensions
    }

    /// Parses the parameters of `GET /v1/analytics/{kind}` (SPEC §6, §14), each as its own
    /// parser does, then checks them together: `from` after `to` is a 422 naming `from`.
    /// The parameters come from a reader that refuses a repeated one (the HTTP layer's
    /// `QueryParameters`).
    public static func parse(
        kind: Kind, appID: UUID, groupBy: String?, from: String?, to: String?, platform: String?
    ) throws(ServiceError) -> AnalyticsQuery {
        let dimensions = try parseGroupBy(groupBy)
        let range = try parseRange(from: from, to: to)
        let platformName = try parsePlatform(platform)
        return AnalyticsQuery(kind: kind, appID: appID, groupBy: dimensions, from: range.from, to: range.to, platform: platformName)
    }

    /// Parses `from` and `to` (`parseTime`); `from` after `to` is a 422 `validationFailed`
    /// naming `from` (an empty range is a mistake, not a question with no rows).
    public static func parseRange(from fromText: String?, to toText: String?) throws(ServiceError) -> (from: Date?, to: Date?) {
        let from = try parseTime(fromText, "from")
        let to = try parseTime(toText, "to")
        if let from, let to, from > to {
            throw ServiceError(
                .validationFailed,
                "from: \(RFC3339.string(from: from)) is after to (\(RFC3339.string(from: to))); from must not be later than to")
        }
        return (from, to)
    }

    /// Parses `from` / `to`: an RFC 3339 time or a date. A time of SPEC §1's form outside its
    /// range is a 422 `validationFailed`, whether the year has four digits (`1500-01-01`) or
    /// more, or a sign (`12026-01-01T00:00:00Z`, `-0001-01-01`); anything else that is not a
    /// time or a date is a 400 `invalidRequest`.
    public static func parseTime(_ text: String?, _ name: String) throws(ServiceError) -> Date? {
        guard let text else { return nil }
        guard let date = RFC3339.date(fromTimeOrDay: text) else {
            if hasYearOutsideRange(text) {
                throw ServiceError(.validationFailed, "\(name): \(RFC3339.rangeMessage)")
            }
            throw ServiceError(.invalidRequest, "\(name): not an RFC 3339 time or a date")
        }
        guard RFC3339.acceptedRange.contains(date) else {
            throw ServiceError(.validationFailed, "\(name): \(RFC3339.rangeMessage)")
        }
        return date
    }

    /// True for a time or date that is well formed but for its year: a year of more than four
    /// digits, a signed one, or a four-digit one before 1970 that the parser does not take
    /// (`0000-01-01`). The rest of the text must read as a time or a date with a year in range
    /// in its place, so that `12026-13-01` stays malformed.
    static func hasYearOutsideRange(_ text: String) -> Bool {
        var rest = Substring(text)
        let signed = rest.first == "-" || rest.first == "+"
        if signed { rest = rest.dropFirst() }
        let digits = rest.prefix { $0.isASCII && $0.isWholeNumber }
        guard digits.count >= 4 else { return false }
        if !signed, digits.count == 4, let year = Int(digits), year >= 1970 { return false }
        // 2000 is a leap year: February 29 of the real year is not judged here.
        return RFC3339.date(fromTimeOrDay: "2000" + String(rest.dropFirst(digits.count))) != nil
    }

    /// One result row: the group's fields, then the metrics, in column order.
    public typealias Row = [(String, JSONNode)]

    /// Rows as the analytics API answers them, `{"rows": [...]}`: each row an object, keys in
    /// byte order (a row's first field of a name wins), numbers as `JSONWriter.number` writes
    /// them. One rendering for the API and for tests that compare counts before and after.
    public static func json(_ rows: [Row]) -> [UInt8] {
        var writer = JSONWriter(capacity: 64 + rows.count * 160)
        writer.objectStart()
        writer.key("rows")
        writer.arrayStart()
        for row in rows {
            var seen = Set<String>()
            let members = row.filter { seen.insert($0.0).inserted }.map { JSONNode.Member(key: $0.0, value: $0.1) }
            writer.node(.object(members), sortedKeys: true)
        }
        writer.arrayEnd()
        writer.objectEnd()
        return writer.bytes
    }

    public func run(on connection: PostgresConnection) throws -> [Row] {
        switch kind {
        case .statuses: return try statuses(on: connection)
        case .prompts: return try prompts(on: connection)
        case .escalations: return try escalations(on: connection)
        case .settings: return try settings(on: connection)
        case .locationButton: return try counters(metric: LocationButtonCount.metric, fields: LocationButtonCount.fields, on: connection)
        }
    }

    /// The grouped sums of one or more metrics: (group values, metric, key, sum).
    private func sums(metrics: [String], on connection: PostgresConnection) throws -> [([JSONNode], String, String, Int64)] {
        let select = groupBy.map { "\($0.column)::text" }
        let columns = (select + ["metric", "key", "sum(count)::bigint"]).joined(separator: ", ")
        let group = (groupBy.map(\.column) + ["metric", "key"]).joined(separator: ", ")
        let order = groupBy.isEmpty ? "metric, key" : groupBy.map(\.column).joined(separator: ", ")
        let fromDay = from.map { RollupCounts.day($0) } ?? "0001-01-01"
        let toDay = to.map { RollupCounts.day($0) } ?? "9999-12-31"
        if from == nil && to == nil && !groupBy.contains(.day) && !groupBy.contains(.week) {
            // All time: the totals, a few rows per app.
            let rows = try connection.query(
                """
                SELECT \(unescaped: columns) FROM analytics_totals
                WHERE app_id = \(appID) AND metric = ANY(\(PostgresArray(metrics)))\(unescaped: platformFilter())
                GROUP BY \(unescaped: group) ORDER BY \(unescaped: order)
                """)
            return try decodeSums(rows)
        }
        // By day or week alone: the counters by day, a few rows per day.
        // (`analytics_days` has no platform: a filtered query reads the rollups.)
        let table = groupBy.allSatisfy({ $0 == .day || $0 == .week }) && platform == nil ? "analytics_days" : "analytics_rollups"
        let rows = try connection.query(
            """
            SELECT \(unescaped: columns) FROM \(unescaped: table)
            WHERE app_id = \(appID) AND metric = ANY(\(PostgresArray(metrics)))
              AND day >= \(fromDay)::date AND day <= \(toDay)::date\(unescaped: platformFilter())
            GROUP BY \(unescaped: group) ORDER BY \(unescaped: order)
            """)
        return try decodeSums(rows)
    }

    private func decodeSums(_ rows: PostgresRows) throws -> [([JSONNode], String, String, Int64)] {
        try rows.map { row in
            let values = try groupBy.indices.map { index throws -> JSONNode in
                let text: String = try row.decode(index)
                return groupBy[index] == .osMajor ? .number(Double(text) ?? 0) : .string(text)
            }
            return (values, try row.decode(groupBy.count), try row.decode(groupBy.count + 1), try row.decode(groupBy.count + 2))
        }
    }

    private func groupFields(_ values: [JSONNode]) -> Row {
        zip(groupBy, values).map { ($0.rawValue, $1) }
    }

    private func prompts(on connection: PostgresConnection) throws -> [Row] {
        struct Tally {
            var shown: Int64 = 0, sessionShown: Int64 = 0, answered: Int64 = 0, inferred: Int64 = 0, granted: Int64 = 0, always: Int64 = 0
            var choices: [String: Int64] = [:]
        }
        var groups: [[JSONNode]: [String: Tally]] = [:]
        var order: [[JSONNode]] = []
        for (values, metric, key, sum) in try sums(
            metrics: ["promptShown", "promptSessionShown", "promptAnswered", "promptInferred", "promptChoice", "promptGranted", "promptAlways"],
            on: connection) {
            if groups[values] == nil { order.append(values) }
            let prompt = metric == "promptChoice" ? String(key.prefix { $0 != ":" }) : key
            var tally = groups[values, default: [:]][prompt] ?? Tally()
            switch metric {
            case "promptShown": tally.shown += sum
            case "promptSessionShown": tally.sessionShown += sum
            case "promptAnswered": tally.answered += sum
            case "promptInferred": tally.inferred += sum
            case "promptGranted": tally.granted += sum
            case "promptAlways": tally.always += sum
            default: tally.choices[String(key.drop { $0 != ":" }.dropFirst()), default: 0] += sum
            }
            groups[values, default: [:]][prompt] = tally
        }
        var rows: [Row] = []
        for values in order {
            for prompt in Prompt.allCases.map(\.rawValue) {
                guard let tally = groups[values]?[prompt] else { continue }
                let rate: (Int64) -> JSONNode = { tally.answered == 0 ? .null : .number(Double($0) / Double(tally.answered)) }
                // A choice a correction emptied (O2) is left out, as one never chosen.
                let choices: [JSONNode.Member] = tally.choices.filter { $0.value != 0 }.sorted { $0.key < $1.key }
                    .map { JSONNode.Member(key: $0.key, value: .number(Double($0.value))) }
                rows.append(groupFields(values) + [
                    ("prompt", .string(prompt)), ("shown", .number(Double(tally.shown))),
                    ("sessionShown", .number(Double(tally.sessionShown))), ("answered", .number(Double(tally.answered))),
                    ("inferred", .number(Double(tally.inferred))),
                    ("choices", .object(choices)),
                    ("grantRate", rate(tally.granted)), ("alwaysRate", rate(tally.always)),
                ])
            }
        }
        return rows
    }

    /// Rows of named counters of one metric (escalations, the location button's counts), each
    /// field 0 where nothing was counted.
    private func counters(metric: String, fields: [String], on connection: PostgresConnection) throws -> [Row] {
        var groups: [[JSONNode]: [String: Int64]] = [:]
        var order: [[JSONNode]] = []
        for (values, _, key, sum) in try sums(metrics: [metric], on: connection) {
            if groups[values] == nil { order.append(values) }
            groups[values, default: [:]][key, default: 0] += sum
        }
        if order.isEmpty && groupBy.isEmpty { order = [[]] }
        return order.map { values in
            groupFields(values) + fields.map { ($0, .number(Double(groups[values]?[$0] ?? 0))) }
        }
    }

    /// The escalation funnel's counters, and V6's `effectiveAlways`: devices authorizedAlways
    /// now that hold an active or resumable `always` session, counted like the status
    /// distribution (the present; `from`/`to` do not apply), each in the row of its current
    /// context.
    private func escalations(on connection: PostgresConnection) throws -> [Row] {
        var rows = try counters(metric: "milestone", fields: DeviceMilestones.names.map(\.1), on: connection)
        var effective = try effectiveAlways(on: connection)
        for index in rows.indices {
            let values = rows[index].prefix(groupBy.count).map(\.1)
            rows[index].append(("effectiveAlways", .number(Double(effective.removeValue(forKey: Array(values)) ?? 0))))
        }
        // Groups with effective Always devices and no milestone counted in them.
        for (values, count) in effective.sorted(by: { "\($0.key)" < "\($1.key)" }) {
            rows.append(groupFields(values) + DeviceMilestones.names.map { ($0.1, JSONNode.number(0)) } + [("effectiveAlways", .number(Double(count)))])
        }
        return rows
    }

    /// The jsonpath that finds an active or resumable `always` session in a stored state.
    static let effectiveAlwaysPath = #"$.sessions.* ? (@.requirement == "always" && (@.active == true || @.resumable == true))"#

    /// V6's count per group; every Android device in Always counts (Android has no sessions,
    /// SPEC §12). Without day or week: from the maintained counts per distinct state
    /// (a few rows). By day or week: each device's row in `device_states`, in the day its latest
    /// event was recorded (`updated_at`).
    private func effectiveAlways(on connection: PostgresConnection) throws -> [[JSONNode]: Int64] {
        let byDay = groupBy.contains(.day) || groupBy.contains(.week)
        let columns = groupBy.map { dimension -> String in
            switch dimension {
            case .day: "(updated_at AT TIME ZONE 'UTC')::date::text"
            case .week: "date_trunc('week', (updated_at AT TIME ZONE 'UTC')::date)::date::text"
            default: "\(dimension.deviceColumn ?? "NULL")::text"
            }
        }
        let group = groupBy.isEmpty ? "" : "GROUP BY " + columns.joined(separator: ", ")
        let rows: PostgresRows
        if byDay {
            rows = try connection.query(
                """
                SELECT \(unescaped: (columns + ["count(*)::bigint"]).joined(separator: ", ")) FROM device_states
                WHERE app_id = \(appID) AND status = 'authorizedAlways'
                  AND (platform = 'android' OR state @? \(Self.effectiveAlwaysPath)::jsonpath)\(unescaped: platformFilter())
                \(unescaped: group)
                """)
        } else {
            rows = try connection.query(
                """
                SELECT \(unescaped: (columns + ["coalesce(sum(c.devices), 0)::bigint"]).joined(separator: ", "))
                FROM device_counts c JOIN device_state_kinds k ON k.state_id = c.state_id
                WHERE c.app_id = \(appID) AND c.status = 'authorizedAlways'
                  AND (c.platform = 'android' OR k.state @? \(Self.effectiveAlwaysPath)::jsonpath)\(unescaped: platformFilter("c.platform"))
                \(unescaped: group)
                """)
        }
        var counts: [[JSONNode]: Int64] = [:]
        for row in rows {
            let values = try groupBy.indices.map { index throws -> JSONNode in
                let text: String = try row.decode(index)
                return groupBy[index] == .osMajor ? .number(Double(text) ?? 0) : .string(text)
            }
            let count: Int64 = try row.decode(groupBy.count)
            if count != 0 { counts[values, default: 0] += count }
        }
        return counts
    }

    private func settings(on connection: PostgresConnection) throws -> [Row] {
        var groups: [[JSONNode]: (Int64, Int64)] = [:]
        var order: [[JSONNode]] = []
        for (values, metric, _, sum) in try sums(metrics: ["settingsUpgrade", "settingsDowngrade"], on: connection) {
            if groups[values] == nil { order.append(values) }
            var pair = groups[values] ?? (0, 0)
            if metric == "settingsUpgrade" { pair.0 += sum } else { pair.1 += sum }
            groups[values] = pair
        }
        if order.isEmpty && groupBy.isEmpty { order = [[]] }
        return order.map { values in
            let pair = groups[values] ?? (0, 0)
            return groupFields(values) + [("upgrades", .number(Double(pair.0))), ("downgrades", .number(Double(pair.1)))]
        }
    }

    /// The current status distribution, from the projection; day and week do not apply.
    private func statuses(on connection: PostgresConnection) throws -> [Row] {
        let columns = groupBy.compactMap(\.deviceColumn)
        guard columns.count == groupBy.count else {
            throw ServiceError(.invalidRequest, "statuses are the current distribution: group them by platform, osMajor or appVersion")
        }
        let select = (columns.map { "\($0)::text" } + [
            "status", "sum(c.devices)::bigint",
            """
            coalesce(sum(c.devices) FILTER (WHERE c.state_id IN (
                SELECT k.state_id FROM device_state_kinds k WHERE k.state @? \(Self.blockedPath.sqlLiteral)::jsonpath)), 0)::bigint
            """,
        ]).joined(separator: ", ")
        let group = (columns + ["status"]).joined(separator: ", ")
        // The maintained counts (a row per distinct state and lane), not every device's row;
        // `blocked` (SPEC §12) tests each distinct state once, into a set of the blocked ones
        // (a hashed subplan), rather than joining every count to its whole state: at ten million
        // events that join hashed 8 MB of states and took 48 ms of the query's 48; this, 18.
        let rows = try connection.query(
            """
            SELECT \(unescaped: select) FROM device_counts c
            WHERE c.app_id = \(appID)\(unescaped: platformFilter("c.platform"))
            GROUP BY \(unescaped: group) HAVING sum(c.devices) <> 0 ORDER BY \(unescaped: group)
            """)
        return try rows.map { row in
            let values = try groupBy.indices.map { index throws -> JSONNode in
                let text: String = try row.decode(index)
                return groupBy[index] == .osMajor ? .number(Double(text) ?? 0) : .string(text)
            }
            return groupFields(values) + [
                ("status", .string(try row.decode(groupBy.count))),
                ("count", .number(Double(try row.decode(groupBy.count + 1) as Int64))),
                ("blocked", .number(Double(try row.decode(groupBy.count + 2) as Int64))),
            ]
        }
    }

    /// An Android state with a blocked permission group (SPEC §12, D5).
    static let blockedPath = "$.blocked.* ? (@ == true)"
}

extension String {
    /// A constant of this file as an SQL string literal (no quotes inside).
    fileprivate var sqlLiteral: String { "'" + replacingOccurrences(of: "'", with: "''") + "'" }
}
