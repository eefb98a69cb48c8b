extension SVGChart {
    /// One event of a device as its status chart draws it: the status after the event, and the
    /// prompts it showed.
    struct StatusStep: Sendable, Equatable {
        var version: Int64
        var status: String
        var prompts: [String]
    }

    /// SPEC §8's device chart: a lane per status (in `lanes`' order, those the device was in),
    /// and in it a band across the events during which the device held that status; the events
    /// are equal steps of the x axis, from the first version to the last. Above the lanes each
    /// prompt is marked (a triangle and a dotted line down through the lanes, named where
    /// there is room). The accessible name: "`title`. status from version a to b; status at
    /// version c. Prompts: prompt at version d; ...".
    static func statusBands(_ title: String, _ steps: [StatusStep], lanes: [String]) -> Markup {
        guard let first = steps.first, let last = steps.last else { return note("No events yet.") }
        var present = lanes.filter { lane in steps.contains { $0.status == lane } }
        for step in steps where !present.contains(step.status) { present.append(step.status) }
        func colour(_ status: String) -> Colour { Colour.series(lanes.firstIndex(of: status) ?? lanes.count + (present.firstIndex(of: status) ?? 0)) }

        // The runs: consecutive events with the same status.
        var runs: [(status: String, from: Int, to: Int)] = []
        for (index, step) in steps.enumerated() {
            if let previous = runs.last, previous.status == step.status {
                runs[runs.count - 1].to = index
            } else {
                runs.append((status: step.status, from: index, to: index))
            }
        }

        var canvas = Canvas()
        let left = min(150, (present.map { textWidth($0, size: 11) }.max() ?? 60) + 10)
        let right = width - 4
        let pitch = (right - left) / Double(steps.count)
        func centre(_ index: Int) -> Double { left + pitch * (Double(index) + 0.5) }
        let laneTop = 24.0, laneHeight = 20.0
        let bottom = laneTop + laneHeight * Double(present.count)

        canvas.text("prompts", x: 0, y: 14, size: 11, colour: .muted)
        for (index, status) in present.enumerated() {
            let top = laneTop + laneHeight * Double(index)
            canvas.line(x1: left, y1: top + laneHeight, x2: right, y2: top + laneHeight, stroke: .grid)
            canvas.text(fitted(status, width: left - 8, size: 11), x: 0, y: top + 14, size: 11)
        }
        for run in runs {
            let lane = Double(present.firstIndex(of: run.status) ?? 0)
            canvas.rect(
                x: left + pitch * Double(run.from), y: laneTop + laneHeight * lane + 3,
                width: pitch * Double(run.to - run.from + 1), height: laneHeight - 6, fill: colour(run.status), stroke: .paper)
        }
        var free = left
        for (index, step) in steps.enumerated() where !step.prompts.isEmpty {
            let x = centre(index)
            canvas.line(x1: x, y1: 20, x2: x, y2: bottom, stroke: .text, dash: .dotted)
            canvas.triangle(x: x, y: 20, size: 7, fill: .text)
            let name = step.prompts.joined(separator: ", ")
            let nameWidth = textWidth(name, size: 10)
            if x + 5 >= free && x + 5 + nameWidth <= width {
                canvas.text(name, x: x + 5, y: 12, size: 10)
                free = x + 5 + nameWidth + 6
            }
        }
        canvas.text("version \(first.version)", x: left, y: bottom + 14, size: 10, colour: .muted)
        if steps.count > 1 {
            canvas.text("version \(last.version)", x: right, y: bottom + 14, size: 10, colour: .muted, anchor: .end)
        }

        let bands = runs.map { run in
            let from = steps[run.from].version, to = steps[run.to].version
            return from == to ? "\(run.status) at version \(from)" : "\(run.status) from version \(from) to \(to)"
        }
        let prompts = steps.flatMap { step in step.prompts.map { "\($0) at version \(step.version)" } }
        let label = title + ". " + bands.joined(separator: "; ") + "." + (prompts.isEmpty ? " No prompts." : " Prompts: " + prompts.joined(separator: "; ") + ".")
        return canvas.markup(label: label, height: bottom + 22)
    }
}
