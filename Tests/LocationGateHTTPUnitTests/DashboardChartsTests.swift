import Foundation
import LocationGateJSON
import LocationGateService
import Testing

@testable import LocationGateHTTP

/// The dashboard's charts and tables from analytics rows as the API gives them (SPEC §8): the
/// charts state the rows' figures in the API's names, the tables fold a prompt's choices into
/// one cell (and the CSV spreads them again), and a device's events read as words and fields.
@Suite("Dashboard: charts and folded tables from analytics rows")
struct DashboardChartsTests {
    static func choices(_ pairs: KeyValuePairs<String, Double>) -> JSONNode {
        .object(pairs.map { JSONNode.Member(key: $0.key, value: .number($0.value)) })
    }

    /// Prompt rows as the API answers them grouped by platform: choices in key order.
    static let promptRows: [AnalyticsQuery.Row] = [
        [("platform", .string("iOS")), ("prompt", .string("whenInUse")), ("shown", .number(200)), ("sessionShown", .number(0)),
         ("answered", .number(200)), ("inferred", .number(4)),
         ("choices", choices(["allowOnce": 30, "allowWhileUsing": 120, "dontAllow": 50])),
         ("grantRate", .number(0.75)), ("alwaysRate", .number(0))],
        [("platform", .string("iOS")), ("prompt", .string("alwaysUpgrade")), ("shown", .number(3)), ("sessionShown", .number(0)),
         ("answered", .number(0)), ("inferred", .number(0)), ("choices", .object([])), ("grantRate", .null), ("alwaysRate", .null)],
    ]

    @Test("The prompts chart: a bar per prompt in its group, the choices in the order the prompt offers them, each with its count")
    func promptChoices() throws {
        let chart = DashboardCharts.promptChoices(Self.promptRows, groupBy: [.platform])
        #expect(SVGChartTests.accessibleName(chart) == "Answers per prompt by platform. "
            + "whenInUse prompt, platform iOS: allowWhileUsing 120, allowOnce 30, dontAllow 50; alwaysUpgrade prompt, platform iOS: none")
        let ungrouped = DashboardCharts.promptChoices([Self.promptRows[0]], groupBy: [])
        #expect(SVGChartTests.accessibleName(ungrouped) == "Answers per prompt. whenInUse prompt: allowWhileUsing 120, allowOnce 30, dontAllow 50")
    }

    @Test("The overview's charts: devices by status as one bar, rates per prompt, the trend as a line per prompt")
    func overview() throws {
        let statuses: [AnalyticsQuery.Row] = [
            [("status", .string("authorizedWhenInUse")), ("count", .number(12)), ("blocked", .number(0))],
            [("status", .string("notDetermined")), ("count", .number(5)), ("blocked", .number(0))],
            [("status", .string("denied")), ("count", .number(2)), ("blocked", .number(1))],
        ]
        #expect(SVGChartTests.accessibleName(DashboardCharts.statuses(statuses))
            == "Devices by status. devices: notDetermined 5, denied 2, authorizedWhenInUse 12")
        #expect(SVGChartTests.accessibleName(DashboardCharts.promptRates(Self.promptRows))
            == "Grant rate and Always rate per prompt. whenInUse: grant rate 75.0%, Always rate 0.0%; alwaysUpgrade: grant rate none, Always rate none")
        let trend: [AnalyticsQuery.Row] = [
            [("day", .string("2026-11-19")), ("prompt", .string("whenInUse")), ("grantRate", .number(0.5))],
            [("day", .string("2026-11-18")), ("prompt", .string("alwaysUpgrade")), ("grantRate", .number(1))],
            [("day", .string("2026-11-18")), ("prompt", .string("whenInUse")), ("grantRate", .number(0.25))],
            [("day", .string("2026-11-19")), ("prompt", .string("alwaysUpgrade")), ("grantRate", .null)],
        ]
        #expect(SVGChartTests.accessibleName(DashboardCharts.promptTrend(trend, period: .day))
            == "Grant rate per day, a line per prompt. whenInUse: 2026-11-18 25.0%, 2026-11-19 50.0%; alwaysUpgrade: 2026-11-18 100.0%")
        #expect(DashboardCharts.statuses([]).renderText == #"<p class="muted">No devices yet.</p>"#)
    }

    @Test("Funnels sum each step over the groups; Settings changes are lines by day, bars by group")
    func funnelsAndSettings() throws {
        let escalations: [AnalyticsQuery.Row] = [
            [("platform", .string("iOS")), ("reachedWhenInUse", .number(8)), ("askedAlways", .number(4)), ("effectiveAlways", .number(1))],
            [("platform", .string("android")), ("reachedWhenInUse", .number(2)), ("askedAlways", .number(1)), ("effectiveAlways", .number(0))],
        ]
        let funnel = DashboardCharts.funnel("Escalation", escalations, steps: ["reachedWhenInUse", "askedAlways", "effectiveAlways"])
        #expect(SVGChartTests.accessibleName(funnel)
            == "Escalation. reachedWhenInUse 10; askedAlways 5 (50.0% of reachedWhenInUse); effectiveAlways 1 (10.0% of reachedWhenInUse)")
        let byDay: [AnalyticsQuery.Row] = [
            [("day", .string("2026-11-19")), ("upgrades", .number(1)), ("downgrades", .number(3))],
            [("day", .string("2026-11-18")), ("upgrades", .number(2)), ("downgrades", .number(0))],
        ]
        let lines = DashboardCharts.settingsChanges(byDay, groupBy: [.day])
        #expect(SVGChartTests.accessibleName(lines)
            == "Settings changes per day. upgrades: 2026-11-18 2, 2026-11-19 1; downgrades: 2026-11-18 0, 2026-11-19 3")
        #expect(lines.renderText.contains("<polyline"))
        let byPlatform: [AnalyticsQuery.Row] = [[("platform", .string("iOS")), ("upgrades", .number(1)), ("downgrades", .number(3))]]
        #expect(SVGChartTests.accessibleName(DashboardCharts.settingsChanges(byPlatform, groupBy: [.platform]))
            == "Settings changes by platform. platform iOS: upgrades 1, downgrades 3")
    }

    @Test("A prompts table folds the choices into one cell of named counts, keeps every number exact, and its CSV spreads them again")
    func foldedTable() throws {
        let table = DashboardTable.analytics(id: "prompts", title: "Prompts", rows: Self.promptRows)
        #expect(table.columns == ["platform", "prompt", "shown", "sessionShown", "answered", "inferred", "choices", "grantRate", "alwaysRate"])
        let cell = table.rows[0][6]
        #expect(cell.text == "allowWhileUsing 120 · allowOnce 30 · dontAllow 50")
        #expect(cell.counts.map(\.name) == ["allowWhileUsing", "allowOnce", "dontAllow"] && cell.counts.map(\.value) == ["120", "30", "50"])
        let html = try DashboardTemplateTests.render(
            DashboardPage.View(
                layout: DashboardLayout(title: "Prompts", active: "", signedIn: true), filters: nil,
                sections: [DashboardPage.SectionView(chart: .empty, table: table.view(csvHref: "/x"))], device: nil),
            .prompts)
        #expect(html.contains(#"<td><span class="part" data-name="allowWhileUsing" data-value="120">allowWhileUsing 120</span> · "#
            + #"<span class="part" data-name="allowOnce" data-value="30">allowOnce 30</span> · "#
            + #"<span class="part" data-name="dontAllow" data-value="50">dontAllow 50</span></td>"#), "\(html)")
        #expect(html.contains(#"<td class="n" data-value="0.75">75.0%</td>"#))
        #expect(html.contains("<td></td>"), "no choices: an empty cell")
        let lines = table.csv.components(separatedBy: "\r\n")
        #expect(lines[0] == "platform,prompt,shown,sessionShown,answered,inferred,choices:allowOnce,choices:allowWhileUsing,choices:dontAllow,grantRate,alwaysRate")
        #expect(lines[1] == "iOS,whenInUse,200,0,200,4,30,120,50,0.75,0.0")
        #expect(lines[2] == "iOS,alwaysUpgrade,3,0,0,0,0,0,0,,")
    }

    @Test("An event in words, its data as named fields: never JSON")
    func eventsInWords() throws {
        let cases: [(String, JSONNode, String)] = [
            ("authorizationRequested", .object([.init(key: "request", value: .string("whenInUse"))]), "Asked for When In Use"),
            ("promptResponded", .object([.init(key: "choice", value: .string("allowWhileUsing"))]), "Chose Allow While Using"),
            ("promptResponded", .object([.init(key: "choice", value: .string("dontAllow"))]), "Chose Don't Allow"),
            ("settingsChanged", .object([.init(key: "preciseLocation", value: .bool(false))]), "Settings: precise location off"),
            ("settingsChanged", .object([.init(key: "authorization", value: .string("whileUsing"))]), "Settings: location While Using the App"),
            ("statusObserved", .object([.init(key: "status", value: .string("authorizedAlways"))]), "Observed status authorizedAlways"),
            ("appStateChanged", .object([.init(key: "state", value: .string("background"))]), "Went to the background"),
            ("permissionsResult", .object([
                .init(key: "granted", value: .array([.string("coarse"), .string("fine")])), .init(key: "denied", value: .array([])),
            ]), "Permission result: granted coarse, fine"),
            ("contextReported", .object([
                .init(key: "platform", value: .string("iOS")), .init(key: "osVersion", value: .string("17.4")),
                .init(key: "appVersion", value: .string("4.1")),
            ]), "Reported its context: iOS 17.4, app 4.1"),
            ("locationButtonResult", .object([.init(key: "granted", value: .bool(true))]), "Location button: granted"),
            ("someFutureType", .object([]), "Some Future Type"),
        ]
        for (type, data, sentence) in cases {
            #expect(EventInWords.sentence(type: type, data: data) == sentence, "\(type)")
        }
        let data = JSONNode.object([
            .init(key: "platform", value: .string("android")), .init(key: "apiLevel", value: .number(34)),
            .init(key: "declaredPermissions", value: .array([.string("coarse"), .string("fine")])),
            .init(key: "nested", value: .object([.init(key: "a", value: .bool(true)), .init(key: "b", value: .null)])),
        ])
        let fields = EventInWords.fields(data)
        #expect(fields.map { $0.name } == ["platform", "apiLevel", "declaredPermissions", "nested"])
        #expect(fields.map { $0.text } == ["android", "34", "coarse, fine", "(a: true, b: none)"])
        #expect(!fields.map { $0.text }.joined().contains("{"), "never JSON")
        let cell = DashboardTable.Cell.fields(fields)
        #expect(cell.text == "platform: android, apiLevel: 34, declaredPermissions: coarse, fine, nested: (a: true, b: none)")
        let table = DashboardTable(id: "timeline", title: "Timeline", columns: ["event", "data"], rows: [
            [.described("Asked for When In Use", code: "authorizationRequested"), cell],
        ])
        let html = try DashboardTemplateTests.render(
            DashboardPage.View(
                layout: DashboardLayout(title: "Device", active: "", signedIn: true), filters: nil,
                sections: [DashboardPage.SectionView(chart: .empty, table: table.view(csvHref: "/x"))], device: nil),
            .device)
        #expect(html.contains("<td>Asked for When In Use<br><code>authorizationRequested</code></td>"), "\(html)")
        #expect(html.contains(#"<td><dl class="fields"><div><dt>platform:</dt> <dd>android</dd></div><div><dt>apiLevel:</dt> <dd>34</dd></div>"#))
        #expect(table.csv.contains(#""platform: android, apiLevel: 34, declaredPermissions: coarse, fine, nested: (a: true, b: none)""#))
    }
}
