import Foundation
import Testing

@testable import LocationGateHTTP

/// The chart kinds (SPEC §8 "Pictures before tables") as pure functions, read without a
/// browser: each is an `<svg role="img">` scaled to its box whose accessible name states its
/// figures, and every text in it is escaped.
@Suite("Dashboard charts: SVG that states its figures")
struct SVGChartTests {
    static let hostile = #"<script>alert("1&2")</script>"#
    static let escaped = "&lt;script&gt;alert(&quot;1&amp;2&quot;)&lt;/script&gt;"

    /// The accessible name of a chart's `<svg>`, unescaped back for reading.
    static func accessibleName(_ chart: SVGChart.Markup) -> String? {
        let text = chart.renderText
        guard let start = text.range(of: #"aria-label=""#),
              let end = text[start.upperBound...].firstIndex(of: "\"")
        else { return nil }
        return String(text[start.upperBound..<end])
            .replacingOccurrences(of: "&quot;", with: "\"").replacingOccurrences(of: "&#39;", with: "'")
            .replacingOccurrences(of: "&lt;", with: "<").replacingOccurrences(of: "&gt;", with: ">")
            .replacingOccurrences(of: "&amp;", with: "&")
    }

    static func occurrences(_ needle: String, in chart: SVGChart.Markup) -> Int {
        chart.renderText.components(separatedBy: needle).count - 1
    }

    /// Every chart is an image with a name, and scales to its box.
    static func expectScaledImage(_ chart: SVGChart.Markup, sourceLocation: SourceLocation = #_sourceLocation) {
        let text = chart.renderText
        #expect(text.hasPrefix(#"<svg class="chart" viewBox="0 0 400 "#), "\(text)", sourceLocation: sourceLocation)
        #expect(text.contains(#" width="100%" role="img" aria-label=""#), sourceLocation: sourceLocation)
        #expect(text.contains("<title>") && text.hasSuffix("</svg>"), sourceLocation: sourceLocation)
        #expect(!text.contains(#"width="-"#) && !text.contains("nan") && !text.contains("inf"), sourceLocation: sourceLocation)
    }

    @Test("A stacked bar per item: the accessible name states each segment's count; counts that fit are drawn inside, the others named under the bar")
    func stackedBars() throws {
        let chart = SVGChart.stackedBars("Answers per prompt", [
            SVGChart.StackedBar(label: "whenInUse prompt", segments: [
                .init(name: "allowWhileUsing", count: 120), .init(name: "allowOnce", count: 30), .init(name: "dontAllow", count: 50),
            ]),
            SVGChart.StackedBar(label: "alwaysUpgrade prompt", segments: [
                .init(name: "changeToAlwaysAllow", count: 399), .init(name: "keepOnlyWhileUsing", count: 1),
            ]),
            SVGChart.StackedBar(label: "fullAccuracy prompt", segments: []),
        ])
        Self.expectScaledImage(chart)
        #expect(Self.accessibleName(chart) == "Answers per prompt. whenInUse prompt: allowWhileUsing 120, allowOnce 30, dontAllow 50; "
            + "alwaysUpgrade prompt: changeToAlwaysAllow 399, keepOnlyWhileUsing 1; fullAccuracy prompt: none")
        // Inside their segments: 120, 30, 50 and 399; 1 of 400 is one unit wide, so it is named under its bar.
        for figure in ["120", "30", "50", "399"] {
            #expect(chart.renderText.contains(">\(figure)</text>"), "\(figure)")
        }
        #expect(chart.renderText.contains(">keepOnlyWhileUsing 1</text>"))
        #expect(!chart.renderText.contains(">1</text>"))
        // A legend names each choice once, in the order they first appear.
        for name in ["allowWhileUsing", "allowOnce", "dontAllow", "changeToAlwaysAllow", "keepOnlyWhileUsing"] {
            #expect(Self.occurrences(">\(name)</text>", in: chart) == 1, "\(name)")
        }
        // Each segment's width is its share of the chart's 400 units.
        #expect(chart.renderText.contains(##"width="240" height="20" fill="#0072B2""##), "120 of 200")
        #expect(chart.renderText.contains(##"width="60" height="20" fill="#E69F00""##), "30 of 200")
        #expect(chart.renderText.contains(">total 200</text>") && chart.renderText.contains(">none</text>"))
    }

    @Test("Lines: one per series over the x axis, a gap breaks a line, the accessible name states every point")
    func lines() throws {
        let chart = SVGChart.lines(
            "Grant rate per day", xs: ["2026-11-18", "2026-11-19", "2026-11-20", "2026-11-21", "2026-11-22"],
            series: [
                SVGChart.Series(name: "whenInUse", values: [0.5, 0.6, nil, 0.7, 0.8]),
                SVGChart.Series(name: "alwaysUpgrade", values: [nil, 0.25, nil, nil, nil]),
            ],
            maximum: 1, format: SVGChart.percent)
        Self.expectScaledImage(chart)
        #expect(Self.accessibleName(chart) == "Grant rate per day. whenInUse: 2026-11-18 50.0%, 2026-11-19 60.0%, 2026-11-21 70.0%, "
            + "2026-11-22 80.0%; alwaysUpgrade: 2026-11-19 25.0%")
        #expect(Self.occurrences("<polyline", in: chart) == 2, "the gap on the 20th breaks whenInUse's line; one point draws none")
        #expect(Self.occurrences("<circle", in: chart) == 5, "every point is marked")
        #expect(chart.renderText.contains(#"stroke-dasharray="7 3""#), "the second line is dashed as well as coloured")
        #expect(chart.renderText.contains(">2026-11-18</text>") && chart.renderText.contains(">2026-11-22</text>"))
        #expect(chart.renderText.contains(">100.0%</text>") && chart.renderText.contains(">0.0%</text>"))
        let single = SVGChart.lines("One day", xs: ["2026-11-18"], series: [SVGChart.Series(name: "upgrades", values: [3])], maximum: 3, format: SVGChart.count)
        #expect(Self.accessibleName(single) == "One day. upgrades: 2026-11-18 3")
        #expect(Self.occurrences("<circle", in: single) == 1)
        #expect(SVGChart.lines("Nothing", xs: [], series: [], maximum: 1, format: SVGChart.percent).renderText.hasPrefix(#"<p class="muted">"#))
    }

    @Test("Bars and a funnel state their values; a funnel gives each step's share of the first")
    func barsAndFunnel() throws {
        let bars = SVGChart.bars("Rates", series: ["grant rate", "Always rate"], groups: [
            SVGChart.BarGroup(label: "whenInUse", values: [0.75, 0]), SVGChart.BarGroup(label: "alwaysUpgrade", values: [nil, 0.5]),
        ], maximum: 1, format: SVGChart.percent)
        Self.expectScaledImage(bars)
        #expect(Self.accessibleName(bars) == "Rates. whenInUse: grant rate 75.0%, Always rate 0.0%; alwaysUpgrade: grant rate none, Always rate 50.0%")
        #expect(bars.renderText.contains(">grant rate</text>") && bars.renderText.contains(">Always rate</text>"), "two series: a legend")

        let funnel = SVGChart.funnel("Escalation", [
            SVGChart.FunnelStep(label: "reachedWhenInUse", count: 10), SVGChart.FunnelStep(label: "askedAlways", count: 5),
            SVGChart.FunnelStep(label: "permanentAlways", count: 0),
        ])
        Self.expectScaledImage(funnel)
        #expect(Self.accessibleName(funnel)
            == "Escalation. reachedWhenInUse 10; askedAlways 5 (50.0% of reachedWhenInUse); permanentAlways 0 (0.0% of reachedWhenInUse)")
        for text in [">reachedWhenInUse</text>", ">10</text>", ">askedAlways</text>", ">5</text>", ">50.0%</text>", ">0</text>"] {
            #expect(funnel.renderText.contains(text), "\(text)")
        }
        #expect(funnel.renderText.contains(#"<rect x="100" y="58" width="200" height="14""#), "half the largest, centred")
    }

    @Test("Status bands: a band per run of a status, in its lane; prompts marked; the accessible name states runs and prompts by version")
    func statusBands() throws {
        let chart = SVGChart.statusBands("Status", [
            SVGChart.StatusStep(version: 1, status: "notDetermined", prompts: ["whenInUse"]),
            SVGChart.StatusStep(version: 2, status: "authorizedWhenInUse", prompts: []),
            SVGChart.StatusStep(version: 3, status: "authorizedWhenInUse", prompts: ["alwaysUpgrade"]),
            SVGChart.StatusStep(version: 4, status: "authorizedAlways", prompts: []),
            SVGChart.StatusStep(version: 5, status: "notDetermined", prompts: []),
        ], lanes: ["notDetermined", "restricted", "denied", "authorizedWhenInUse", "authorizedAlways"])
        Self.expectScaledImage(chart)
        #expect(Self.accessibleName(chart) == "Status. notDetermined at version 1; authorizedWhenInUse from version 2 to 3; "
            + "authorizedAlways at version 4; notDetermined at version 5. Prompts: whenInUse at version 1; alwaysUpgrade at version 3.")
        // Lanes only for the statuses the device was in, in the lanes' order.
        let text = chart.renderText
        let lanes = ["notDetermined", "authorizedWhenInUse", "authorizedAlways"].compactMap { text.range(of: ">\($0)</text>")?.lowerBound }
        #expect(lanes.count == 3 && lanes == lanes.sorted())
        #expect(!text.contains(">denied</text>") && !text.contains(">restricted</text>"))
        #expect(Self.occurrences("<polygon", in: chart) == 2, "a mark per prompt")
        #expect(Self.occurrences(##"height="14" fill="#"##, in: chart) == 4, "four runs")
        #expect(text.contains(">version 1</text>") && text.contains(">version 5</text>"))
        #expect(SVGChart.statusBands("Status", [], lanes: []).renderText == #"<p class="muted">No events yet.</p>"#)
    }

    @Test("Interval bars: the rate as a bar, its 95% interval as a whisker, a second rate marked; none where nothing was counted")
    func intervalBars() throws {
        let chart = SVGChart.intervalBars("Exposed grant rate per variant", [
            SVGChart.IntervalBar(label: "control", rate: 0.41, interval: 0.352...0.471, marker: 0.6),
            SVGChart.IntervalBar(label: "priming", rate: nil, interval: nil, marker: nil),
        ], rateName: "exposed grant rate", markerName: "grant rate of those who answered")
        Self.expectScaledImage(chart)
        #expect(Self.accessibleName(chart) == "Exposed grant rate per variant. control: exposed grant rate 41.0% (95% interval 35.2% to 47.1%), "
            + "grant rate of those who answered 60.0%; priming: exposed grant rate none, grant rate of those who answered none")
        #expect(chart.renderText.contains(">41.0% (35.2%–47.1%)</text>") && chart.renderText.contains(">none</text>"))
        // The bar runs to 41% of the 392-unit scale; the whisker from 35.2% to 47.1% with two caps.
        #expect(chart.renderText.contains(#"width="160.7" height="14""#), "\(chart.renderText)")
        #expect(chart.renderText.contains(#"x1="138" "#) && chart.renderText.contains(#"x1="184.6" "#))
        #expect(Self.occurrences("<polygon", in: chart) == 1, "one marker")
    }

    @Test("Every label, name and value of every kind is escaped; none becomes markup")
    func everyTextIsEscaped() throws {
        let hostile = Self.hostile
        let charts = [
            SVGChart.stackedBars(hostile, [SVGChart.StackedBar(label: hostile, segments: [.init(name: hostile, count: 1)])]),
            SVGChart.lines(hostile, xs: [hostile, hostile], series: [SVGChart.Series(name: hostile, values: [1, 2])], maximum: 2, format: { _ in hostile }),
            SVGChart.bars(hostile, series: [hostile, hostile], groups: [SVGChart.BarGroup(label: hostile, values: [1, nil])], format: { _ in hostile }),
            SVGChart.funnel(hostile, [SVGChart.FunnelStep(label: hostile, count: 1)]),
            SVGChart.statusBands(hostile, [SVGChart.StatusStep(version: 1, status: hostile, prompts: [hostile])], lanes: []),
            SVGChart.intervalBars(hostile, [SVGChart.IntervalBar(label: hostile, rate: 0.5, interval: 0.4...0.6)], rateName: hostile, markerName: hostile),
            SVGChart.note(hostile),
        ]
        for chart in charts {
            #expect(!chart.renderText.contains("<script"), "\(chart.renderText)")
            #expect(!chart.renderText.contains(#""1&2""#))
            #expect(chart.renderText.contains(Self.escaped))
        }
        for chart in charts.dropLast() {
            #expect(Self.accessibleName(chart)?.hasPrefix(hostile + ". ") == true, "the title opens the accessible name")
        }
    }

    @Test("Long labels are cut to the chart's width; past the limit, bars are counted, not drawn")
    func bounds() throws {
        let long = String(repeating: "x", count: 300)
        let chart = SVGChart.stackedBars("Long", (0..<(SVGChart.stackedBarLimit + 5)).map { index in
            SVGChart.StackedBar(label: index == 0 ? long : "bar \(index)", segments: [.init(name: "a", count: 1)])
        })
        #expect(!chart.renderText.contains(">\(long)</text>") && chart.renderText.contains("…</text>"))
        #expect(Self.accessibleName(chart)?.contains(long + ": a 1") == true, "the accessible name keeps the whole label")
        #expect(chart.renderText.contains("The first \(SVGChart.stackedBarLimit) of \(SVGChart.stackedBarLimit + 5) are drawn; the table has them all."))
        #expect(Self.accessibleName(chart)?.contains("bar \(SVGChart.stackedBarLimit + 4): a 1") == true, "every bar's figures are stated")
        #expect(SVGChart.fitted("abcdef", width: 1000, size: 12) == "abcdef")
        #expect(SVGChart.count(.nan) == "0" && SVGChart.count(12.0) == "12" && SVGChart.percent(0.1234) == "12.3%")
    }
}
