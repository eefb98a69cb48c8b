import Foundation
import Mustache

/// Charts drawn on the server as SVG: no script is needed to read them. Pure functions, data in
/// and SVG out, so tests read a chart without a browser.
///
/// A chart is the one thing the dashboard's templates write unescaped (`section.mustache`), and
/// that is safe by construction: its markup is a `Markup`, which only this file can make, built
/// from numbers formatted here, a fixed palette, and labels and values that `escape` turns into
/// text (a label is often a client's: an `appVersion` grouped by). No string from elsewhere can
/// become a `Markup`.
enum SVGChart {
    /// SVG (or a note in place of a chart) made by this file alone, for the templates'
    /// unescaped `chart`. Its initializer is private to this file.
    struct Markup: MustacheCustomRenderable, Sendable {
        /// The markup, as `{{{chart}}}` writes it.
        let renderText: String
        var isNull: Bool { false }

        fileprivate init(_ markup: String) { renderText = markup }

        /// No chart: a table alone.
        static let empty = Markup("")
    }

    /// Horizontal bars, one per item, scaled to the largest value (or to `maximum`).
    static func bars(_ items: [(label: String, value: Double)], maximum: Double? = nil, format: (Double) -> String) -> Markup {
        guard !items.isEmpty else { return Markup(#"<p class="muted">Nothing to show for these filters.</p>"#) }
        let top = max(maximum ?? items.map(\.value).max() ?? 1, 1e-9)
        let rowHeight = 22
        let height = items.count * rowHeight + 4
        var svg = #"<svg viewBox="0 0 600 \#(height)" role="img" aria-label="bar chart">"#
        for (index, item) in items.enumerated() {
            let y = index * rowHeight + 2
            let width = max(0, min(1, item.value / top)) * 330
            svg += #"<text x="0" y="\#(y + 15)" font-size="12" fill="rgb(28,36,48)">\#(escape(String(item.label.prefix(32))))</text>"#
            svg += #"<rect x="200" y="\#(y + 3)" width="\#(String(format: "%.1f", width))" height="15" fill="rgb(61,123,217)"/>"#
            svg += #"<text x="\#(String(format: "%.1f", 206 + width))" y="\#(y + 15)" font-size="12" fill="rgb(28,36,48)">\#(escape(format(item.value)))</text>"#
        }
        return Markup(svg + "</svg>")
    }

    /// Lines over an ordered x axis (days or weeks), one per series, values from 0 to `maximum`.
    static func lines(xs: [String], series: [(name: String, values: [Double?])], maximum: Double) -> Markup {
        guard xs.count > 1, !series.isEmpty else { return Markup(#"<p class="muted">A trend needs two days or more.</p>"#) }
        let colors = ["rgb(61,123,217)", "#d9822b", "#2e9d5b", "#9b51e0", "#c0392b", "#7f8c8d"]
        let left = 40.0, width = 540.0, top = 10.0, height = 160.0
        func x(_ index: Int) -> Double { left + width * Double(index) / Double(xs.count - 1) }
        func y(_ value: Double) -> Double { top + height * (1 - min(1, max(0, value / maximum))) }
        var svg = #"<svg viewBox="0 0 600 \#(Int(top + height + 40 + Double(series.count) * 16))" role="img" aria-label="line chart">"#
        svg += #"<line x1="\#(left)" y1="\#(top + height)" x2="\#(left + width)" y2="\#(top + height)" stroke="rgb(170,179,191)"/>"#
        svg += #"<text x="0" y="\#(top + 10)" font-size="11" fill="rgb(102,112,133)">\#(Int(maximum * 100))%</text>"#
        svg += #"<text x="0" y="\#(top + height)" font-size="11" fill="rgb(102,112,133)">0%</text>"#
        svg += #"<text x="\#(left)" y="\#(top + height + 16)" font-size="11" fill="rgb(102,112,133)">\#(escape(xs[0]))</text>"#
        svg += #"<text x="\#(left + width)" y="\#(top + height + 16)" font-size="11" fill="rgb(102,112,133)" text-anchor="end">\#(escape(xs[xs.count - 1]))</text>"#
        for (number, line) in series.enumerated() {
            let color = colors[number % colors.count]
            let points = line.values.enumerated().compactMap { index, value in
                value.map { String(format: "%.1f,%.1f", x(index), y($0)) }
            }
            if points.count > 1 {
                svg += #"<polyline fill="none" stroke="\#(color)" stroke-width="2" points="\#(points.joined(separator: " "))"/>"#
            }
            let legendY = Int(top + height + 34) + number * 16
            svg += #"<rect x="\#(left)" y="\#(legendY - 9)" width="10" height="10" fill="\#(color)"/>"#
            svg += #"<text x="\#(left + 16)" y="\#(legendY)" font-size="11" fill="rgb(28,36,48)">\#(escape(line.name))</text>"#
        }
        return Markup(svg + "</svg>")
    }

    /// Text as SVG (XML) text or an attribute's value: the five characters that could end either,
    /// looked for as scalars (a quote followed by a combining mark is one `Character`, yet it
    /// still ends an attribute).
    private static func escape(_ text: String) -> String {
        var escaped = ""
        escaped.reserveCapacity(text.utf8.count)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "&": escaped += "&amp;"
            case "<": escaped += "&lt;"
            case ">": escaped += "&gt;"
            case "\"": escaped += "&quot;"
            case "'": escaped += "&#39;"
            default: escaped.unicodeScalars.append(scalar)
            }
        }
        return escaped
    }
}
