import Foundation
import LocationAuthorization
import LocationGateService
import Testing

@testable import LocationGateHTTP

/// The Experiments pages (SPEC §16 "Dashboard", §8) rendered without a server: each variant's
/// exposed grant rate as a bar with its 95% interval and the grant rate of those who answered,
/// stated in the chart's accessible name and tabled with the results' exact numbers; the stop
/// form for an admin key's session on a running experiment only; every text escaped.
@Suite("Dashboard: the Experiments pages")
struct DashboardExperimentsTests {
    static let hostile = DashboardTemplateTests.hostile
    static let escaped = DashboardTemplateTests.escaped

    /// `ask-early`: the variant `early` against the control `dialog`, the control granted 41 of
    /// 100 exposed (60 answered), the variant 30 of 120 (40 answered).
    static func experiment(description: String = "") throws -> Experiment {
        let definition = try ExperimentDefinition(
            key: "ask-early", description: description, prompt: .anyOf([.whenInUse, .locationButton]),
            variants: [ExperimentVariant(key: "dialog", weight: 50), ExperimentVariant(key: "early", weight: 50)],
            control: "dialog", guard: try ExperimentGuard(maxDrop: 0.05, minAnswered: 100))
        return Experiment(definition: definition, createdAt: Date(timeIntervalSince1970: 1_795_000_000))
    }

    static func results(_ experiment: Experiment) -> ExperimentResults {
        ExperimentResults(
            experiment: experiment.key, state: experiment.state,
            variants: VariantResult.rows(of: experiment.definition, counts: [
                VariantCounts(variant: "dialog", exposed: 100, answered: 60, granted: 41),
                VariantCounts(variant: "early", exposed: 120, answered: 40, granted: 30),
            ]))
    }

    static func render(_ page: DashboardPage, _ path: String) throws -> String {
        try DashboardTemplateTests.render(page.view(for: DashboardTemplateTests.request(path)), page.template)
    }

    /// The accessible name of the first chart of `html`, unescaped back for reading.
    static func chartName(_ html: String) -> String? {
        guard let start = html.range(of: #"aria-label=""#), let end = html[start.upperBound...].firstIndex(of: "\"") else { return nil }
        return String(html[start.upperBound..<end]).replacingOccurrences(of: "&amp;", with: "&")
    }

    @Test("An experiment's page: the chart states each variant's exposed grant rate, its interval and the answered grant rate; the table the exact numbers")
    func detail() throws {
        let experiment = try Self.experiment(description: Self.hostile)
        let results = Self.results(experiment)
        let page = DashboardRoutes.experimentDetailPage(experiment, results, canStop: true)
        let html = try Self.render(page, "/dashboard/experiments/ask-early")
        #expect(!html.contains("<script"), "\(html)")
        #expect(html.contains("<title>Experiment ask-early · LocationGate</title>"))
        #expect(html.contains(#"<a href="/dashboard/experiments" class="active">Experiments</a>"#))
        // The figures, as the results give them (Wilson's interval at z = 1.959964).
        let detailTitle: String = "Exposed grant rate per variant, with its 95% interval and the grant rate of those who answered. "
        let detailDialog: String = "dialog: exposed grant rate 41.0% (95% interval 31.9% to 50.8%), grant rate of those who answered 68.3%; "
        let detailEarly: String = "early: exposed grant rate 25.0% (95% interval 18.1% to 33.4%), grant rate of those who answered 75.0%"
        let detailName: String = detailTitle + detailDialog + detailEarly
        let detailChartName: String? = Self.chartName(html)
        #expect(detailChartName == detailName)
        for variant in results.variants {
            let rates: [Double?] = [variant.exposedGrantRate, variant.ci95Exposed?.low, variant.ci95Exposed?.high, variant.grantRate]
            let expected: [String] = rates.map { (rate: Double?) -> String in SVGChart.percent(rate ?? Double.nan) }
            let name: String = Self.chartName(html) ?? ""
            let ratePart: String = "\(variant.variant): exposed grant rate \(expected[0]) (95% interval \(expected[1]) to \(expected[2])), "
            let answeredPart: String = "grant rate of those who answered \(expected[3])"
            let variantPart: String = ratePart + answeredPart
            #expect(name.contains(variantPart))
        }
        // The table: the API's field names, the control first, each number exact in data-value.
        #expect(html.contains(#"<table id="results"><thead><tr><th>variant</th><th>exposed</th><th>answered</th><th>granted</th><th>grantRate</th><th>ci95</th><th>exposedGrantRate</th><th>ci95Exposed</th><th>uplift</th><th>pValue</th></tr>"#))
        #expect(html.contains(#"<tr><td>dialog</td><td class="n" data-value="100">100</td><td class="n" data-value="60">60</td><td class="n" data-value="41">41</td>"#))
        #expect(html.contains(#"<td class="n" data-value="0.41">41.0%</td>"#))
        let control = try #require(results.variants.first), other = try #require(results.variants.last)
        let low = try #require(control.ci95Exposed?.low), high = try #require(control.ci95Exposed?.high)
        #expect(html.contains(#"<span class="part" data-name="low" data-value="\#(low)">low 31.9%</span> · <span class="part" data-name="high" data-value="\#(high)">high 50.8%</span>"#))
        let uplift = try #require(other.uplift), p = try #require(other.pValue)
        #expect(html.contains(#"<td class="n" data-value="\#(uplift)">-16.0 pts</td><td class="n" data-value="\#(p)">0.011</td></tr>"#), "\(html)")
        #expect(html.contains(#"<td class="n" data-value="">–</td><td class="n" data-value="">–</td></tr>"#), "the control has no uplift and no p")
        // The definition, its description escaped.
        #expect(html.contains("<td>description</td><td>\(Self.escaped)</td>"))
        #expect(html.contains("<td>prompt</td><td>whenInUse, locationButton</td>") && html.contains("<td>variants</td><td>dialog 50, early 50</td>"))
        #expect(html.contains("<td>guard</td><td>maxDrop 0.05, minAnswered 100</td>"))
        // An admin key's session on a running experiment: the stop form, the control chosen.
        #expect(html.contains(#"<form class="filters" id="stop" method="post" action="/dashboard/experiments/ask-early/stop">"#))
        #expect(html.contains(#"<select name="winner"><option value="dialog" selected>dialog (control)</option><option value="early">early</option></select>"#))
        #expect(!html.contains(#"id="read-only""#) && !html.contains(#"id="stopped""#) && !html.contains(#"id="error""#))
        #expect(html.contains(#"<p id="status" data-state="running">Running since "#))
        // The CSV link downloads the API's CSV.
        #expect(html.contains(#"<a href="/dashboard/experiments/ask-early?csv=results">CSV</a>"#))
        #expect(page.tables.first?.csv == ExperimentFormat.csv(results))
    }

    @Test("A read key's session sees no stop form; a stopped experiment has none either and names its winner; a refusal is escaped")
    func stopForm() throws {
        let experiment = try Self.experiment()
        let read = try Self.render(DashboardRoutes.experimentDetailPage(experiment, Self.results(experiment), canStop: false), "/dashboard/experiments/ask-early")
        #expect(!read.contains("<form class=\"filters\" id=\"stop\"") && !read.contains(#"name="winner""#))
        #expect(read.contains(#"<p class="muted" id="read-only">"#))

        var stopped = experiment
        try stopped.stop(winner: "early", reason: .operator, at: Date(timeIntervalSince1970: 1_795_100_000))
        let page = DashboardRoutes.experimentDetailPage(stopped, Self.results(stopped), canStop: true, stopped: true, error: Self.hostile)
        let html = try Self.render(page, "/dashboard/experiments/ask-early")
        #expect(!html.contains(#"name="winner""#) && !html.contains(#"id="read-only""#))
        #expect(html.contains(#"<p class="saved" id="stopped">Stopped.</p>"#))
        #expect(html.contains(#"<p class="error" id="error">\#(Self.escaped)</p>"#) && !html.contains("<script"))
        #expect(html.contains(#"data-state="stopped">Stopped at "#) && html.contains("by an operator (stopReason operator, winner early)"))
        #expect(html.contains("<td>winner</td><td>early</td>") && html.contains("<td>stopReason</td><td>operator</td>"))
    }

    @Test("The Experiments page: a card per experiment with its link, state, prompt kinds, outcome and chart; then the table")
    func list() throws {
        let running = try Self.experiment()
        var stopped = try Self.experiment()
        try stopped.stop(reason: .guard, at: Date(timeIntervalSince1970: 1_795_100_000))
        let page = DashboardRoutes.experimentListPage([(experiment: running, results: Self.results(running)), (experiment: stopped, results: Self.results(stopped))])
        let html = try Self.render(page, "/dashboard/experiments")
        #expect(html.contains(#"<section class="experiment" data-experiment="ask-early"><h2><a href="/dashboard/experiments/ask-early">ask-early</a></h2>"#))
        #expect(html.contains(#"<span class="state">running</span> · prompt whenInUse, locationButton</p>"#))
        #expect(html.contains(#"<span class="state">stopped</span> · prompt whenInUse, locationButton · <span class="outcome">stopReason guard, winner dialog</span></p>"#))
        let pieces: [String] = html.components(separatedBy: #"<svg class="chart""#)
        let charts: Int = pieces.count - 1
        #expect(charts == 2)
        let listTitle: String = "ask-early: exposed grant rate per variant. "
        let listBars: String = "dialog: exposed grant rate 41.0% (95% interval 31.9% to 50.8%); early: exposed grant rate 25.0% (95% interval 18.1% to 33.4%)"
        let listName: String = listTitle + listBars
        let listChartName: String? = Self.chartName(html)
        #expect(listChartName == listName)
        #expect(html.contains(#"<table id="experiments">"#) && html.contains("<td>guard</td><td>dialog</td>"))

        let empty = try Self.render(DashboardRoutes.experimentListPage([]), "/dashboard/experiments")
        #expect(empty.contains("No experiments yet") && !empty.contains("<svg"))
    }

    @Test("A variant that exposed nothing is drawn as none, its interval and rates null in the table")
    func nothingExposed() throws {
        let experiment = try Self.experiment()
        let results = ExperimentResults(experiment: experiment.key, state: .running, variants: VariantResult.rows(of: experiment.definition, counts: []))
        let html = try Self.render(DashboardRoutes.experimentDetailPage(experiment, results, canStop: false), "/dashboard/experiments/ask-early")
        let noneDialog: String = "dialog: exposed grant rate none, grant rate of those who answered none; "
        let noneEarly: String = "early: exposed grant rate none, grant rate of those who answered none"
        let noneSuffix: String = noneDialog + noneEarly
        let noneChartName: String = Self.chartName(html) ?? ""
        #expect(noneChartName.hasSuffix(noneSuffix))
        #expect(html.contains(#"<tr><td>early</td><td class="n" data-value="0">0</td><td class="n" data-value="0">0</td><td class="n" data-value="0">0</td><td class="n" data-value="">–</td>"#))
        #expect(!html.contains("NaN") && !html.contains(#""nan"#) && !html.contains(#""inf"#))
    }
}
