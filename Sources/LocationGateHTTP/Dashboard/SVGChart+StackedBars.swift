extension SVGChart {
    /// One bar of a stacked bar chart: what it counts (a prompt with its group, a feature), and
    /// its segments in the order they are drawn.
    struct StackedBar: Sendable, Equatable {
        struct Segment: Sendable, Equatable {
            var name: String
            var count: Double
        }

        var label: String
        var segments: [Segment]

        var total: Double { segments.reduce(0) { $0 + max(0, $1.count) } }
    }

    /// Bars drawn at most; the chart says how many more its table has.
    static let stackedBarLimit = 60

    /// SPEC §8: a bar per item, its segments the shares of its total, each labelled with its
    /// count: inside the segment where the count fits, else named with it under the bar. A
    /// segment's colour is its name's across the chart, and the legend names them. The
    /// accessible name: "`title`. label: name count, name count; label: ...".
    static func stackedBars(_ title: String, _ bars: [StackedBar]) -> Markup {
        guard !bars.isEmpty else { return note("Nothing to show for these filters.") }
        let drawn = bars.prefix(stackedBarLimit)
        var names: [String] = []
        for bar in drawn {
            for segment in bar.segments where !names.contains(segment.name) { names.append(segment.name) }
        }
        func colour(_ name: String) -> Colour { Colour.series(names.firstIndex(of: name) ?? 0) }
        var canvas = Canvas()
        var y = canvas.legend(names.map { LegendEntry(name: $0, colour: colour($0)) }, y: 0) + 4
        let barHeight = 20.0
        for bar in drawn {
            let total = bar.total
            let totalText = "total " + count(total)
            canvas.text(fitted(bar.label, width: width - textWidth(totalText, size: 11) - 12, size: 12), x: 0, y: y + 13, bold: true)
            canvas.text(totalText, x: width, y: y + 13, size: 11, colour: .muted, anchor: .end)
            let top = y + 18
            var unlabelled: [String] = []
            if total > 0 {
                var x = 0.0
                for segment in bar.segments where segment.count > 0 {
                    let share = segment.count / total * width
                    let fill = colour(segment.name)
                    canvas.rect(x: x, y: top, width: share, height: barHeight, fill: fill, stroke: .paper)
                    let figure = count(segment.count)
                    if textWidth(figure, size: 11) + 6 <= share {
                        canvas.label(figure, on: fill, x: x + share / 2, y: top + 14)
                    } else {
                        unlabelled.append("\(segment.name) \(figure)")
                    }
                    x += share
                }
            } else {
                canvas.rect(x: 0, y: top, width: width, height: barHeight, fill: .paper, stroke: .axis)
                canvas.text("none", x: width / 2, y: top + 14, size: 11, colour: .muted, anchor: .middle)
            }
            y = top + barHeight
            if !unlabelled.isEmpty {
                y = canvas.wrapped(unlabelled, y: y + 13)
            }
            y += 12
        }
        if bars.count > drawn.count {
            canvas.text("The first \(drawn.count) of \(bars.count) are drawn; the table has them all.", x: 0, y: y + 10, size: 11, colour: .muted)
            y += 16
        }
        let figures = bars.map { bar in
            "\(bar.label): " + (bar.segments.isEmpty ? "none" : bar.segments.map { "\($0.name) \(count($0.count))" }.joined(separator: ", "))
        }
        return canvas.markup(label: title + ". " + figures.joined(separator: "; "), height: y)
    }
}
