import Foundation
import HTTPTypes
import Hummingbird
import LocationGateService
import NIOCore
import Testing
@testable import LocationGateHTTP

/// The dashboard's templates with their typed view models, without a server: every text is
/// escaped wherever a template writes it, and only a chart is written as markup.
@Suite("Dashboard templates: typed view models, every text escaped")
struct DashboardTemplateTests {
    static let hostile = #"<script>alert("1&2")</script>"#
    /// As `{{ }}` (and `SVGChart`) write it.
    static let escaped = "&lt;script&gt;alert(&quot;1&amp;2&quot;)&lt;/script&gt;"

    static func render(_ view: Any, _ template: DashboardTemplates.Name) throws -> String {
        try DashboardTemplates.bundled.get().render(view, template)
    }

    static func request(_ pathAndQuery: String) -> Request {
        Request(
            head: HTTPRequest(method: .get, scheme: "http", authority: "localhost", path: pathAndQuery),
            body: RequestBody(buffer: ByteBuffer()))
    }

    @Test("A table's rows: every kind of cell as its markup, every text of it escaped (numbers, marked, counts, fields, codes)")
    func tableRowsAreMarkupOfEscapedText() throws {
        let h = Self.hostile, e = Self.escaped
        let table = DashboardTable(id: "t", title: "T", columns: ["a", "b", "c", "d", "e"], rows: [
            [.text(h), .marked(h), .described(h, code: h), DashboardTable.Cell(text: h, value: h), .rate(0.25)],
            [.counts([(h, 3), ("deny", 1)]), .fields([(h, h), ("appVersion", "1.0")]), .interval((0.1, 0.2)), .rate(nil), .count(7)],
        ])
        let rows = table.body.renderText
        #expect(!rows.contains("<script"))
        #expect(rows == "<tr><td>\(e)</td><td><span class=\"inferred\">\(e)</span></td><td>\(e)<br><code>\(e)</code></td>"
            + "<td class=\"n\" data-value=\"\(e)\">\(e)</td><td class=\"n\" data-value=\"0.25\">25.0%</td></tr>\n"
            + "<tr><td><span class=\"part\" data-name=\"\(e)\" data-value=\"3\">\(e) 3</span> · <span class=\"part\" data-name=\"deny\" data-value=\"1\">deny 1</span></td>"
            + "<td><dl class=\"fields\"><div><dt>\(e):</dt> <dd>\(e)</dd></div><div><dt>appVersion:</dt> <dd>1.0</dd></div></dl></td>"
            + "<td><span class=\"part\" data-name=\"low\" data-value=\"0.1\">low 10.0%</span> · <span class=\"part\" data-name=\"high\" data-value=\"0.2\">high 20.0%</span></td>"
            + "<td class=\"n\" data-value=\"\">–</td><td class=\"n\" data-value=\"7\">7</td></tr>\n", "\(rows)")
        // A quote followed by a combining mark is one Character, and still ends an attribute.
        let combining = DashboardTable(id: "t", title: "T", columns: ["a"], rows: [[DashboardTable.Cell(text: "x", value: "\"\u{301} onmouseover=x")]])
        #expect(combining.body.renderText.contains("data-value=\"&quot;\u{301} onmouseover=x\""))
    }

    @Test("The templates ship with the build and every one parses")
    func templatesLoad() throws {
        _ = try DashboardTemplates.bundled.get()
    }

    @Test("Every text of a page is escaped: titles, columns, cells, marked cells, the CSV link, the chart's labels and values")
    func everyTextIsEscaped() throws {
        let table = DashboardTable(id: "timeline", title: Self.hostile, columns: [Self.hostile, "version", "grantRate"], rows: [
            [.text(Self.hostile), .count(3), .rate(0.5)],
            [.marked(Self.hostile), .count(4), .rate(nil)],
        ])
        let chart = SVGChart.bars(
            Self.hostile, series: ["devices"], groups: [SVGChart.BarGroup(label: Self.hostile, values: [1])], format: { _ in Self.hostile })
        let view = DashboardPage.View(
            layout: DashboardLayout(title: Self.hostile, active: "", signedIn: true), filters: nil,
            sections: [DashboardPage.SectionView(chart: chart, table: table.view(csvHref: "/dashboard?x=" + Self.hostile))],
            device: DashboardPage.Device(userID: "user-1", deviceID: "device-1", truncated: true, versions: [1, 2, 3]))
        let html = try Self.render(view, .device)
        #expect(!html.contains("<script"), "\(html)")
        #expect(!html.contains(#""1&2""#))
        // <title>, <h1>, the table's <h2>, its column, the CSV link, a text cell, a marked cell.
        #expect(html.contains(chart.renderText), "the chart is markup")
        let page = html.replacingOccurrences(of: chart.renderText, with: "")
        #expect(page.components(separatedBy: Self.escaped).count - 1 == 7, "\(html)")
        // The chart's title, label and value: in its accessible name, its <title>, and its label
        // and value drawn.
        #expect(chart.renderText.components(separatedBy: Self.escaped).count - 1 == 8, "\(chart.renderText)")
        #expect(html.contains("<td>\(Self.escaped)</td>"))
        #expect(html.contains(#"<td><span class="inferred">\#(Self.escaped)</span></td>"#))
        #expect(html.contains(#"<td class="n" data-value="3">3</td><td class="n" data-value="0.5">50.0%</td>"#))
        #expect(html.contains(#"<td class="n" data-value="">–</td>"#))
        #expect(html.contains(#"<svg class="chart" viewBox="0 0 400 "#) && html.contains(#"width="100%" role="img" aria-label="\#(Self.escaped). \#(Self.escaped): \#(Self.escaped)"><title>"#))
        #expect(html.contains(#"<a href="?version=1">1</a> <a href="?version=2">2</a> <a href="?version=3">3</a></p>"#))
        #expect(html.contains("User <code>user-1</code>, device <code>device-1</code>. The first 1,000 events are shown."))
        #expect(html.contains(#"<table id="timeline">"#))
    }

    @Test("An empty table says so in one cell across its columns; a device without events has no versions")
    func emptyTable() throws {
        let table = DashboardTable(id: "timeline", title: "Timeline", columns: ["a", "b", "c"], rows: [])
        let view = DashboardPage.View(
            layout: DashboardLayout(title: "Device", active: "", signedIn: true), filters: nil,
            sections: [DashboardPage.SectionView(chart: .empty, table: table.view(csvHref: "/x"))],
            device: DashboardPage.Device(userID: "u", deviceID: "d", truncated: false, versions: []))
        let html = try Self.render(view, .device)
        #expect(html.contains(#"<tbody>"#) && html.contains(#"<tr><td colspan="3" class="muted">No data for these filters.</td></tr>"#))
        #expect(html.contains("<section><h2>Timeline</h2>"))
        #expect(html.contains("State as of version: no events</p>"))
        #expect(!html.contains("The first 1,000 events"))
    }

    @Test("The layout: the navigation marks the page, signed out it shows neither links nor sign-out; the sign-in error is escaped")
    func layoutAndSignIn() throws {
        let signedOut = try Self.render(SignInView(layout: DashboardLayout(title: "Sign in", active: "", signedIn: false), error: Self.hostile), .signIn)
        #expect(signedOut.hasPrefix("<!doctype html>"))
        #expect(signedOut.contains("<title>Sign in · LocationGate</title>"))
        #expect(signedOut.contains("<nav></nav>"))
        #expect(signedOut.contains(#"<p class="error">\#(Self.escaped)</p><section><form method="post" action="/dashboard/signin">"#))
        #expect(!signedOut.contains("<script"))
        let form = try Self.render(SignInView(layout: DashboardLayout(title: "Sign in", active: "", signedIn: false), error: nil), .signIn)
        #expect(!form.contains(#"class="error""#) && form.contains(#"<input name="key" type="password""#))

        let message = try Self.render(MessageView(layout: DashboardLayout(title: "Bad filters", active: "", signedIn: true), message: Self.hostile, back: false), .message)
        #expect(message.contains(#"<p class="error">\#(Self.escaped)</p>"#) && !message.contains(#"<a href="/dashboard">Back</a>"#))
        #expect(message.contains(#"<a href="/dashboard">Overview</a><a href="/dashboard/prompts">Prompts</a>"#))
        #expect(message.contains(#"<form method="post" action="/dashboard/signout" class="signout"><button type="submit">Sign out</button></form></nav>"#))
    }

    @Test("A page from a request: its filters as given with the current choices selected, CSV links on its own address, its link marked")
    func pageFromRequest() throws {
        let request = Self.request("/dashboard/prompts?groupBy=appVersion&platform=iOS&from=2026-11-19&csv=old")
        let table = DashboardTable(id: "prompts", title: "Prompts", columns: ["appVersion"], rows: [[.text("4.0")]])
        let filters = try Filters(QueryParameters(of: request))
        let page = DashboardPage(
            template: .prompts, title: "Prompts", active: "/dashboard/prompts", filters: filters,
            groupChoices: ["platform", "appVersion"], sections: [.init(chart: .empty, table: table)])
        let html = try Self.render(page.view(for: request), .prompts)
        #expect(html.contains(#"<a href="/dashboard/prompts" class="active">Prompts</a>"#))
        #expect(html.contains(#"<form class="filters" method="get" action="/dashboard/prompts">"#))
        #expect(html.contains(#"<input type="date" name="from" value="2026-11-19">"#))
        #expect(html.contains(#"<option value="">default</option><option value="platform">platform</option><option value="appVersion" selected>appVersion</option>"#))
        #expect(html.contains(#"<option value="">all</option><option value="iOS" selected>iOS</option>"#))
        #expect(html.contains("csv=prompts\">CSV</a>") && !html.contains("csv=old"))
        #expect(html.contains("groupBy=appVersion&amp;"), "the CSV link keeps the filters")
        #expect(html.contains("<td>4.0</td>"))
    }

    @Test("A page's filters are read as the analytics API reads them: from after to is refused naming from; the same day for both is a range")
    func filtersRange() throws {
        let refusal = #expect(throws: ServiceError.self) { try Filters(QueryParameters(of: Self.request("/dashboard/prompts?from=2026-11-20&to=2026-11-19"))) }
        #expect(refusal?.code == .validationFailed && refusal?.message.hasPrefix("from:") == true, "\(String(describing: refusal))")
        let same = try Filters(QueryParameters(of: Self.request("/dashboard/prompts?from=2026-11-19&to=2026-11-19")))
        #expect(same.from != nil && same.from == same.to)
    }
}
