import LocationAuthorization
import LocationGateJSON
import LocationGateService

/// The dashboard's charts as functions of what its pages read (SPEC §8 "Pictures before
/// tables"): analytics rows, feature coverage, a device's timeline. Each names prompts,
/// choices, statuses and reasons by their API names, so that a chart's accessible name states
/// the analytics API's figures in the API's words. Drawing is `SVGChart`'s.
enum DashboardCharts {
    /// The overview's devices by status: one stacked bar of every device, a segment per status
    /// in `AuthorizationStatus` order.
    static func statuses(_ rows: [AnalyticsQuery.Row]) -> SVGChart.Markup {
        guard !rows.isEmpty else { return SVGChart.note("No devices yet.") }
        var counts: [String: Double] = [:]
        for row in rows {
            guard let status = string(row, "status") else { continue }
            counts[status, default: 0] += number(row, "count") ?? 0
        }
        let segments = ordered(counts.map { (name: $0.key, count: $0.value) }, by: AuthorizationStatus.allCases.map(\.rawValue))
        return SVGChart.stackedBars("Devices by status", [
            SVGChart.StackedBar(label: "devices", segments: segments.map { SVGChart.StackedBar.Segment(name: $0.name, count: $0.count) }),
        ])
    }

    /// The overview's grant rate and Always rate per prompt, as percentages.
    static func promptRates(_ rows: [AnalyticsQuery.Row]) -> SVGChart.Markup {
        SVGChart.bars(
            "Grant rate and Always rate per prompt", series: ["grant rate", "Always rate"],
            groups: rows.map { row in
                SVGChart.BarGroup(label: string(row, "prompt") ?? "", values: [number(row, "grantRate"), number(row, "alwaysRate")])
            },
            maximum: 1, format: SVGChart.percent)
    }

    /// The overview's trend: a line per prompt of its grant rate over the days or weeks
    /// (`period`), prompts in `Prompt` order; a day without answers breaks the line.
    static func promptTrend(_ rows: [AnalyticsQuery.Row], period: AnalyticsQuery.Dimension) -> SVGChart.Markup {
        let periods = Array(Set(rows.map { text($0, period.rawValue) })).sorted()
        var rates: [String: [String: Double]] = [:]
        for row in rows {
            guard let prompt = string(row, "prompt"), let rate = number(row, "grantRate") else { continue }
            rates[prompt, default: [:]][text(row, period.rawValue)] = rate
        }
        let kinds = Prompt.allCases.map(\.rawValue).filter { kind in rows.contains { string($0, "prompt") == kind } }
        let series = kinds.map { kind in
            SVGChart.Series(name: kind, values: periods.map { rates[kind]?[$0] })
        }
        return SVGChart.lines("Grant rate per \(period.rawValue), a line per prompt", xs: periods, series: series, maximum: 1, format: SVGChart.percent)
    }

    /// The prompts page: a stacked bar per row (a prompt, in its group when grouped), its
    /// segments the choices in the order the prompt offers them, each with its count.
    static func promptChoices(_ rows: [AnalyticsQuery.Row], groupBy: [AnalyticsQuery.Dimension]) -> SVGChart.Markup {
        let title = groupBy.isEmpty
            ? "Answers per prompt"
            : "Answers per prompt by " + groupBy.map(\.rawValue).joined(separator: " and ")
        return SVGChart.stackedBars(title, rows.map { row in
            SVGChart.StackedBar(
                label: promptLabel(row, groupBy: groupBy),
                segments: choices(row).map { SVGChart.StackedBar.Segment(name: $0.name, count: $0.count) })
        })
    }

    /// A prompt row as its bar is named: "whenInUse prompt", and in a group "whenInUse prompt,
    /// platform iOS".
    static func promptLabel(_ row: AnalyticsQuery.Row, groupBy: [AnalyticsQuery.Dimension]) -> String {
        ([(string(row, "prompt") ?? "") + " prompt"] + groupBy.map { "\($0.rawValue) \(text(row, $0.rawValue))" })
            .joined(separator: ", ")
    }

    /// A funnel of `steps`, each the sum of its field over the rows (every group together).
    static func funnel(_ title: String, _ rows: [AnalyticsQuery.Row], steps: [String]) -> SVGChart.Markup {
        SVGChart.funnel(title, steps.map { step in
            SVGChart.FunnelStep(label: step, count: rows.reduce(0) { $0 + (number($1, step) ?? 0) })
        })
    }

    /// The escalation funnel's steps (SPEC §8: reached When In Use → asked for Always →
    /// provisional → permanent), then V6's effective Always.
    static let escalationSteps = ["reachedWhenInUse", "askedAlways", "provisional", "provisionalToPermanent", "permanentAlways", "effectiveAlways"]

    /// The location button's funnel (SPEC §12): sessions, results, the consent dialogs and
    /// their answers, direct grants, and the refusals.
    static let locationButtonSteps = ["sessions", "results", "prompted", "direct", "alreadyGranted", "denied", "blocked", "notGrantable", "failures"]

    /// Settings changes: by day or week a line of upgrades and one of downgrades over time;
    /// grouped otherwise, a stacked bar of the two per group.
    static func settingsChanges(_ rows: [AnalyticsQuery.Row], groupBy: [AnalyticsQuery.Dimension]) -> SVGChart.Markup {
        if groupBy.count == 1, let period = groupBy.first, period == .day || period == .week {
            let sorted = rows.sorted { text($0, period.rawValue) < text($1, period.rawValue) }
            let upgrades = sorted.map { number($0, "upgrades") ?? 0 }, downgrades = sorted.map { number($0, "downgrades") ?? 0 }
            return SVGChart.lines(
                "Settings changes per \(period.rawValue)", xs: sorted.map { text($0, period.rawValue) },
                series: [SVGChart.Series(name: "upgrades", values: upgrades), SVGChart.Series(name: "downgrades", values: downgrades)],
                maximum: max(1, (upgrades + downgrades).max() ?? 1), format: SVGChart.count)
        }
        let title = groupBy.isEmpty ? "Settings changes" : "Settings changes by " + groupBy.map(\.rawValue).joined(separator: " and ")
        return SVGChart.stackedBars(title, rows.map { row in
            let label = groupBy.map { "\($0.rawValue) \(text(row, $0.rawValue))" }.joined(separator: ", ")
            return SVGChart.StackedBar(label: label.isEmpty ? "all devices" : label, segments: [
                SVGChart.StackedBar.Segment(name: "upgrades", count: number(row, "upgrades") ?? 0),
                SVGChart.StackedBar.Segment(name: "downgrades", count: number(row, "downgrades") ?? 0),
            ])
        })
    }

    /// The features page: a stacked bar per feature of its devices now, the enabled ones
    /// first, then the others by their reason, most frequent first.
    static func featureDecisions(_ coverage: [FeatureCoverage]) -> SVGChart.Markup {
        guard !coverage.isEmpty else { return SVGChart.note("No features yet.") }
        return SVGChart.stackedBars("Decisions per feature now: enabled, and the reasons of the others", coverage.map { item in
            SVGChart.StackedBar(
                label: item.feature.key,
                segments: [SVGChart.StackedBar.Segment(name: "enabled", count: Double(item.enabled))]
                    + item.reasons.map { SVGChart.StackedBar.Segment(name: $0.0.rawValue, count: Double($0.1)) })
        })
    }

    /// The device page: its status after each event, a band per status, its prompts marked.
    static func deviceStatus(_ steps: [DeviceTimeline.Step]) -> SVGChart.Markup {
        SVGChart.statusBands(
            "Status after each event, prompts marked",
            steps.map { step in
                SVGChart.StatusStep(
                    version: step.entry.version, status: step.entry.after.status.rawValue,
                    prompts: step.entry.effects.compactMap { effect -> String? in
                        if case .promptShown(let prompt) = effect { return prompt.rawValue }
                        return nil
                    })
            },
            lanes: AuthorizationStatus.allCases.map(\.rawValue))
    }

    /// An experiment's variants (SPEC §16, §8 "the Experiments page each variant's grant rate
    /// with its interval"), the control first as the results list them: each variant's exposed
    /// grant rate (granted/exposed, the verdict) as a bar with its 95% interval (`ci95Exposed`),
    /// and with `answered` the grant rate of those who answered (`grantRate`) as a marker. The
    /// figures are the results' own, so the accessible name states the API's numbers.
    static func experimentVariants(_ title: String, _ results: ExperimentResults, answered: Bool) -> SVGChart.Markup {
        let bars: [SVGChart.IntervalBar] = results.variants.map { (variant: VariantResult) -> SVGChart.IntervalBar in
            let interval: ClosedRange<Double>? = DashboardCharts.range(variant.ci95Exposed)
            var marker: Double? = nil
            if answered { marker = variant.grantRate }
            return SVGChart.IntervalBar(label: variant.variant, rate: variant.exposedGrantRate, interval: interval, marker: marker)
        }
        var markerName: String? = nil
        if answered { markerName = "grant rate of those who answered" }
        return SVGChart.intervalBars(title, bars, rateName: "exposed grant rate", markerName: markerName)
    }

    /// An interval as a range; none when it has no finite, ordered bounds (a range of them
    /// would trap).
    static func range(_ interval: WilsonScoreInterval?) -> ClosedRange<Double>? {
        guard let interval, interval.low.isFinite, interval.high.isFinite, interval.low <= interval.high else { return nil }
        let low: Double = interval.low, high: Double = interval.high
        let bounds: ClosedRange<Double> = low...high
        return bounds
    }

    // MARK: - Reading rows

    /// A prompt row's choices with their counts, in the order `PromptChoice` lists them (the
    /// order a prompt offers them), any other name after them.
    static func choices(_ row: AnalyticsQuery.Row) -> [(name: String, count: Double)] {
        guard case .object(let members)? = value(row, "choices") else { return [] }
        return counts(members)
    }

    /// An object's numeric members as counts, ordered as `choices` orders them.
    static func counts(_ members: [JSONNode.Member]) -> [(name: String, count: Double)] {
        let pairs = members.compactMap { member -> (name: String, count: Double)? in
            guard case .number(let count) = member.value else { return nil }
            return (name: member.key, count: count)
        }
        return ordered(pairs, by: PromptChoice.allCases.map(\.rawValue))
    }

    /// `pairs` in the order of `order`, names it lacks after them by name.
    static func ordered(_ pairs: [(name: String, count: Double)], by order: [String]) -> [(name: String, count: Double)] {
        func rank(_ name: String) -> Int { order.firstIndex(of: name) ?? order.count }
        return pairs.sorted { rank($0.name) != rank($1.name) ? rank($0.name) < rank($1.name) : $0.name < $1.name }
    }

    static func value(_ row: AnalyticsQuery.Row, _ name: String) -> JSONNode? { row.first { $0.0 == name }?.1 }

    static func string(_ row: AnalyticsQuery.Row, _ name: String) -> String? {
        if case .string(let text)? = value(row, name) { return text }
        return nil
    }

    static func number(_ row: AnalyticsQuery.Row, _ name: String) -> Double? {
        if case .number(let number)? = value(row, name) { return number }
        return nil
    }

    /// A group field as text, whatever its JSON type (`osMajor` is a number).
    static func text(_ row: AnalyticsQuery.Row, _ name: String) -> String {
        switch value(row, name) {
        case .string(let text)?: text
        case .number(let number)?: SVGChart.count(number)
        default: ""
        }
    }
}
