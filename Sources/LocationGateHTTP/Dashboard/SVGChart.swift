import Foundation
import Mustache

/// Charts drawn on the server as SVG: no script is needed to read them. Pure functions, data in
/// and SVG out, so tests read a chart without a browser. The kinds are in files of their own
/// (`SVGChart+StackedBars.swift`, `+Lines`, `+Bars`, `+StatusBands`, `+IntervalBars`); this file
/// holds what they draw with.
///
/// A chart is one of the two things the dashboard's templates write unescaped (`section.mustache`;
/// the other is a table's rows, `DashboardTable.Body`), and that is safe by construction: its markup is a `Markup`, which only this file can make. The
/// kinds draw on a `Canvas`, whose every element is built here from numbers formatted here, a
/// fixed palette (`Colour`, whose values only this file can name), and text that `HTMLText.escape` turns
/// into text (a label is often a client's: an `appVersion` grouped by). No string from elsewhere
/// can become markup.
///
/// SPEC §8: every chart is an `<svg role="img">` whose accessible name (`aria-label`, and the
/// same text as its `<title>`) states its figures, so a screen reader, and a test, can read
/// it. Its `viewBox` is `width` units wide and it is drawn at the width of its box (CSS caps
/// it, `layout.mustache`), so no chart is wider than its card at 360 px or at 1280 px. Colours
/// are the Okabe-Ito palette, told apart by readers with any common colour-vision deficiency;
/// every chart also names what it draws in words beside it (a legend, a segment's count, a
/// lane's status), so that it reads in grey print too.
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

    /// The width of every chart's `viewBox`. A chart is scaled to its box: at 360 px it is
    /// drawn at about three quarters of this size, and CSS stops it growing past 34rem.
    static let width = 400.0

    /// A colour a chart may use: the page's ink and greys, and the Okabe-Ito palette for series.
    /// Only this file can name one.
    struct Colour: Sendable, Equatable {
        fileprivate let value: String
        /// Text written on this colour (a segment's count): dark, or white on the dark blue.
        fileprivate let ink: String

        fileprivate init(_ value: String, ink: String = "#1c2430") {
            self.value = value
            self.ink = ink
        }

        static let text = Colour("#1c2430", ink: "#ffffff")
        static let muted = Colour("#5c6878", ink: "#ffffff")
        static let axis = Colour("#aab3bf")
        static let grid = Colour("#e5e9ee")
        static let paper = Colour("#ffffff")

        /// Okabe & Ito's palette for colour-blind readers (black left out: it is the text's),
        /// then a grey. A chart's series take them in order.
        static let palette: [Colour] = [
            Colour("#0072B2", ink: "#ffffff"), Colour("#E69F00"), Colour("#009E73"), Colour("#D55E00"),
            Colour("#56B4E9"), Colour("#CC79A7"), Colour("#F0E442"), Colour("#999999"),
        ]

        /// The colour of series `index`; past the palette's eight they repeat, which the words
        /// beside every segment and line keep apart.
        static func series(_ index: Int) -> Colour {
            palette[((index % palette.count) + palette.count) % palette.count]
        }
    }

    /// How a line is drawn. Lines differ in dash as well as colour, so that they stay apart in
    /// grey print.
    enum Dash: Int, Sendable, CaseIterable {
        case solid, dashed, dotted, dashDot

        /// The dash of series `index`.
        static func series(_ index: Int) -> Dash {
            allCases[((index % allCases.count) + allCases.count) % allCases.count]
        }

        fileprivate var attribute: String {
            switch self {
            case .solid: ""
            case .dashed: #" stroke-dasharray="7 3""#
            case .dotted: #" stroke-dasharray="2 3""#
            case .dashDot: #" stroke-dasharray="9 3 2 3""#
            }
        }
    }

    /// Where a text stands against its `x`.
    enum Anchor: Sendable {
        case start, middle, end

        fileprivate var attribute: String {
            switch self {
            case .start: ""
            case .middle: #" text-anchor="middle""#
            case .end: #" text-anchor="end""#
            }
        }
    }

    /// One entry of a legend: a filled swatch, or with `dash` a sample of a line.
    struct LegendEntry: Sendable, Equatable {
        var name: String
        var colour: Colour
        var dash: Dash? = nil
    }

    /// What a chart kind draws on: elements appended in order, each written here, its numbers
    /// formatted and its text escaped. `markup(label:height:)` wraps them in the `<svg>`.
    struct Canvas {
        private var body = ""

        init() {}

        mutating func rect(x: Double, y: Double, width: Double, height: Double, fill: Colour, stroke: Colour? = nil) {
            let outline = stroke.map { #" stroke="\#($0.value)" stroke-width="1""# } ?? ""
            body += #"<rect x="\#(SVGChart.number(x))" y="\#(SVGChart.number(y))" width="\#(SVGChart.number(max(0, width)))" height="\#(SVGChart.number(max(0, height)))" fill="\#(fill.value)"\#(outline)/>"#
        }

        mutating func line(x1: Double, y1: Double, x2: Double, y2: Double, stroke: Colour, width: Double = 1, dash: Dash = .solid) {
            body += #"<line x1="\#(SVGChart.number(x1))" y1="\#(SVGChart.number(y1))" x2="\#(SVGChart.number(x2))" y2="\#(SVGChart.number(y2))" stroke="\#(stroke.value)" stroke-width="\#(SVGChart.number(width))"\#(dash.attribute)/>"#
        }

        mutating func polyline(_ points: [(x: Double, y: Double)], stroke: Colour, width: Double = 2, dash: Dash = .solid) {
            guard points.count > 1 else { return }
            let list = points.map { "\(SVGChart.number($0.x)),\(SVGChart.number($0.y))" }.joined(separator: " ")
            body += #"<polyline fill="none" stroke="\#(stroke.value)" stroke-width="\#(SVGChart.number(width))"\#(dash.attribute) points="\#(list)"/>"#
        }

        mutating func circle(x: Double, y: Double, radius: Double, fill: Colour) {
            body += #"<circle cx="\#(SVGChart.number(x))" cy="\#(SVGChart.number(y))" r="\#(SVGChart.number(radius))" fill="\#(fill.value)"/>"#
        }

        /// A triangle pointing down, its tip at (`x`, `y`): a prompt's mark.
        mutating func triangle(x: Double, y: Double, size: Double, fill: Colour) {
            let half = size / 2
            let points = [(x - half, y - size), (x + half, y - size), (x, y)]
                .map { "\(SVGChart.number($0.0)),\(SVGChart.number($0.1))" }.joined(separator: " ")
            body += #"<polygon points="\#(points)" fill="\#(fill.value)"/>"#
        }

        /// A diamond centred on (`x`, `y`), outlined in the text's colour.
        mutating func diamond(x: Double, y: Double, size: Double, fill: Colour) {
            let half = size / 2
            let points = [(x, y - half), (x + half, y), (x, y + half), (x - half, y)]
                .map { "\(SVGChart.number($0.0)),\(SVGChart.number($0.1))" }.joined(separator: " ")
            body += #"<polygon points="\#(points)" fill="\#(fill.value)" stroke="\#(Colour.text.value)" stroke-width="1"/>"#
        }

        /// `text` as text, escaped; `y` is its baseline.
        mutating func text(
            _ text: String, x: Double, y: Double, size: Double = 12, colour: Colour = .text, anchor: Anchor = .start, bold: Bool = false
        ) {
            let weight = bold ? #" font-weight="600""# : ""
            body += #"<text x="\#(SVGChart.number(x))" y="\#(SVGChart.number(y))" font-size="\#(SVGChart.number(size))" fill="\#(colour.value)"\#(anchor.attribute)\#(weight)>\#(HTMLText.escape(text))</text>"#
        }

        /// `text` centred on (`x`, baseline `y`) over a shape filled with `background`, in the
        /// colour that reads on it.
        mutating func label(_ text: String, on background: Colour, x: Double, y: Double, size: Double = 11) {
            body += #"<text x="\#(SVGChart.number(x))" y="\#(SVGChart.number(y))" font-size="\#(SVGChart.number(size))" fill="\#(background.ink)" text-anchor="middle">\#(HTMLText.escape(text))</text>"#
        }

        /// Entries left to right from `y`, wrapped at the chart's width; the y below them.
        mutating func legend(_ entries: [LegendEntry], y: Double) -> Double {
            guard !entries.isEmpty else { return y }
            var x = 0.0
            var baseline = y + 12
            for entry in entries {
                let sample = entry.dash == nil ? 14.0 : 24.0
                let name = SVGChart.fitted(entry.name, width: SVGChart.width - sample, size: 11)
                let entryWidth = sample + SVGChart.textWidth(name, size: 11) + 12
                if x > 0 && x + entryWidth > SVGChart.width {
                    x = 0
                    baseline += 16
                }
                if let dash = entry.dash {
                    line(x1: x, y1: baseline - 4, x2: x + 18, y2: baseline - 4, stroke: entry.colour, width: 2.5, dash: dash)
                } else {
                    rect(x: x, y: baseline - 10, width: 10, height: 10, fill: entry.colour)
                }
                text(name, x: x + sample, y: baseline, size: 11)
                x += entryWidth
            }
            return baseline + 8
        }

        /// Items written left to right from baseline `y`, separated by " · " and wrapped at the
        /// chart's width; the baseline of the last line.
        mutating func wrapped(_ items: [String], y: Double, size: Double = 11, colour: Colour = .muted) -> Double {
            var lines: [String] = []
            var current = ""
            for item in items {
                let candidate = current.isEmpty ? item : current + " · " + item
                if !current.isEmpty && SVGChart.textWidth(candidate, size: size) > SVGChart.width {
                    lines.append(current)
                    current = item
                } else {
                    current = candidate
                }
            }
            if !current.isEmpty { lines.append(current) }
            var baseline = y
            for (index, line) in lines.enumerated() {
                baseline = y + Double(index) * (size + 3)
                text(SVGChart.fitted(line, width: SVGChart.width, size: size), x: 0, y: baseline, size: size, colour: colour)
            }
            return baseline
        }

        /// The chart: an `<svg role="img">` scaled to its box, named by `label` (its figures)
        /// as `aria-label` and `<title>`.
        func markup(label: String, height: Double) -> Markup {
            let name = HTMLText.escape(label)
            return Markup(
                #"<svg class="chart" viewBox="0 0 \#(SVGChart.number(SVGChart.width)) \#(SVGChart.number(max(1, height.rounded(.up))))" width="100%" role="img" aria-label="\#(name)"><title>\#(name)</title>\#(body)</svg>"#)
        }
    }

    /// A sentence in place of a chart, when there is nothing to draw.
    static func note(_ text: String) -> Markup {
        Markup(#"<p class="muted">\#(HTMLText.escape(text))</p>"#)
    }

    // MARK: - Figures and text

    /// A count as the tables show it: a whole number.
    static func count(_ value: Double) -> String {
        guard value.isFinite, abs(value) < 9e15 else { return "0" }
        return String(Int64(value.rounded()))
    }

    /// A rate as the tables show it: a percentage with one decimal.
    static func percent(_ value: Double) -> String {
        guard value.isFinite else { return "–" }
        return DecimalText.oneDecimal(value * 100) + "%"
    }

    /// About how wide `text` is drawn at `size` (system sans-serif: 0.6 em a character on
    /// average), to decide whether it fits.
    static func textWidth(_ text: String, size: Double) -> Double {
        Double(text.count) * size * 0.6
    }

    /// `text`, cut with "…" to fit `width` at `size`.
    static func fitted(_ text: String, width: Double, size: Double) -> String {
        guard textWidth(text, size: size) > width else { return text }
        let keep = max(1, Int(width / (size * 0.6)) - 1)
        return String(text.prefix(keep)) + "…"
    }

    /// A coordinate: one decimal, "." whatever the locale, 0 for a value that is not finite.
    private static func number(_ value: Double) -> String {
        guard value.isFinite else { return "0" }
        let rounded = (value * 10).rounded() / 10
        return rounded == rounded.rounded() && abs(rounded) < 1e15 ? String(Int64(rounded)) : DecimalText.oneDecimal(rounded)
    }

}
