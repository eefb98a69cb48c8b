import EventLog
import Foundation
import LocationAuthorization
@testable import LocationGateService
import LocationGateTestSupport
import PostgresClient
import Testing

/// SPEC §16 clause by clause against a real PostgreSQL, beside `ExperimentServiceTests`: the
/// unit through I1's reinstall, stickiness against a device that stops being eligible, exactly
/// what `answered` and `granted` count (the kind, the exposure, the stop, Always, inferred
/// answers), the rows' figures and nulls, retention and erasure of exposures, a bulk
/// evaluation of every experiment, and the guard's one stop when servers race. Tests that count
/// have databases of their own (the tally's checkpoint serves every app of its database).
/// Assignments that must not depend on buckets are made by weights of 100 and 0, changed while
/// the experiment runs (only unexposed devices move).
@Suite("Experiments: SPEC §16 conformance (units, stickiness, what counts, retention, the guard's one stop)", .timeLimit(.minutes(5)))
struct ExperimentConformanceTests {
    static func body(_ text: String) -> [UInt8] { Array(text.utf8) }

    static func submissions(_ user: String, _ device: String, _ events: [LocationEvent]) -> [EventSubmission] {
        events.map { event in EventSubmission(id: UUID(), userId: user, deviceId: device, occurredAt: Date(), event: event) }
    }

    static func context(installID: String? = nil, platform: Platform = .iOS, appVersion: String = "1.0") -> LocationEvent {
        .contextReported(DeviceContext(platform: platform, osVersion: OSVersion(17, 4), appVersion: appVersion, installID: installID))
    }

    static func count(_ pool: PostgresConnectionPool, _ query: PostgresQuery) async throws -> Int64 {
        try await pool.query(query).first?.decode(0, as: Int64.self) ?? -1
    }

    /// A definition whose variants take weights `weights`, in order.
    static func definition(
        prompt: String = #""whenInUse""#, variants: [String], weights: [Int], control: String? = nil, extra: String = ""
    ) -> String {
        let listed = zip(variants, weights).map { #"{"key": "\#($0)", "weight": \#($1)}"# }.joined(separator: ", ")
        let controlField = control.map { #", "control": "\#($0)""# } ?? ""
        return #"{"prompt": \#(prompt), "variants": [\#(listed)]\#(controlField)\#(extra)}"#
    }

    /// The variants' counts as the results show them, by variant.
    static func counts(_ service: GateService, _ appID: UUID, _ key: String) async throws -> [String: VariantCounts] {
        let results = try await service.experiments.experimentResults(appID: appID, key: key)
        var byVariant: [String: VariantCounts] = [:]
        for row in results.variants {
            byVariant[row.variant] = VariantCounts(variant: row.variant, exposed: row.exposed, answered: row.answered, granted: row.granted)
        }
        return byVariant
    }

    /// Waits (with a deadline: the tally reads below the cluster's oldest writing transaction,
    /// which other tests' databases may hold back) until the results show `expected`.
    static func waitForCounts(
        _ service: GateService, _ appID: UUID, _ key: String, _ expected: [String: VariantCounts]
    ) async throws -> [String: VariantCounts] {
        _ = try await waitUntil(timeout: .seconds(60), poll: .milliseconds(50)) {
            try await Self.counts(service, appID, key) == expected
        }
        return try await Self.counts(service, appID, key)
    }

    static func approximately(_ value: Double?, _ expected: Double, within tolerance: Double = 1e-9) -> Bool {
        guard let value else { return false }
        return abs(value - expected) <= tolerance
    }

    static func number(_ detail: AuditDetail?) -> Double? {
        switch detail {
        case .int(let value)?: Double(value)
        case .number(let value)?: value
        default: nil
        }
    }

    // MARK: - The unit (I1)

    @Test("I1: a device exposed under install A that reports install B is exposed anew at its next evaluation (exposed +1), and its answers count for the new unit only; a first installId after a device: exposure changes nothing")
    func reinstallMakesANewUnit() async throws {
        let pool = try await TestDatabase.privatePool(prefix: "locgate_experiment_units")
        let service = GateService(pool: pool, logger: TestDatabase.logger)
        let appID = try await TestDatabase.makeApp(pool)
        let experiments = service.experiments
        _ = try await experiments.putExperiment(
            appID: appID, key: "units", body: Self.body(Self.definition(variants: ["control", "primer"], weights: [100, 0])), actor: .cli)

        // Exposed under install A.
        _ = try await service.events.ingest(appID: appID, submissions: Self.submissions("re", "phone", [Self.context(installID: "install-a")]))
        let first = try await experiments.evaluateExperiment(appID: appID, key: "units", userID: "re", deviceID: "phone")
        #expect(first.reason == .assigned && first.exposedAt != nil, "\(first)")
        #expect(try await Self.count(pool, "SELECT count(*) FROM experiment_exposures WHERE app_id = \(appID) AND unit = 'install:install-a'") == 1)

        // The app was deleted and installed again: a new installation, a new unit.
        _ = try await service.events.ingest(appID: appID, submissions: Self.submissions("re", "phone", [Self.context(installID: "install-b")]))
        let second = try await experiments.evaluateExperiment(appID: appID, key: "units", userID: "re", deviceID: "phone")
        #expect(second.reason == .assigned && second.exposedAt != nil && second.exposedAt != first.exposedAt, "\(second) after \(first)")
        #expect(try await Self.count(pool, "SELECT count(*) FROM experiment_exposures WHERE app_id = \(appID) AND unit = 'install:install-b'") == 1)
        // Sticky for the new unit from now on.
        #expect(try await experiments.evaluateExperiment(appID: appID, key: "units", userID: "re", deviceID: "phone") == second)

        // Answers from now on count for install B only.
        _ = try await service.events.ingest(
            appID: appID, submissions: Self.submissions("re", "phone", [.authorizationRequested(.whenInUse), .promptResponded(.allowWhileUsing)]))

        // Exposed as device: (no installId yet); its first installId later changes nothing.
        _ = try await service.events.ingest(appID: appID, submissions: Self.submissions("late", "phone", [Self.context()]))
        let before = try await experiments.evaluateExperiment(appID: appID, key: "units", userID: "late", deviceID: "phone")
        #expect(before.reason == .assigned && before.exposedAt != nil)
        _ = try await service.events.ingest(appID: appID, submissions: Self.submissions("late", "phone", [Self.context(installID: "install-c")]))
        let after = try await experiments.evaluateExperiment(appID: appID, key: "units", userID: "late", deviceID: "phone")
        #expect(after == before, "\(after) after \(before)")
        #expect(try await Self.count(pool, "SELECT count(*) FROM experiment_exposures WHERE app_id = \(appID) AND user_id = 'late'") == 1)
        #expect(try await Self.count(pool, "SELECT count(*) FROM experiment_exposures WHERE app_id = \(appID) AND unit = 'install:install-c'") == 0)
        // Its answer counts for its device: unit.
        _ = try await service.events.ingest(
            appID: appID, submissions: Self.submissions("late", "phone", [.authorizationRequested(.whenInUse), .promptResponded(.dontAllow)]))

        let expected = [
            "control": VariantCounts(variant: "control", exposed: 3, answered: 2, granted: 1),
            "primer": VariantCounts(variant: "primer"),
        ]
        #expect(try await Self.waitForCounts(service, appID, "units", expected) == expected)
        #expect(try await Self.count(
            pool, "SELECT count(*) FROM experiment_exposures WHERE app_id = \(appID) AND unit = 'install:install-b' AND answered AND granted") == 1)
        #expect(try await Self.count(
            pool,
            "SELECT count(*) FROM experiment_exposures WHERE app_id = \(appID) AND unit = 'install:install-a' AND NOT answered AND replaced_position IS NOT NULL"
        ) == 1)
        #expect(try await Self.count(
            pool, "SELECT count(*) FROM experiment_exposures WHERE app_id = \(appID) AND unit = 'device:late/phone' AND answered AND NOT granted") == 1)
        await pool.close()
    }

    @Test("I1: a device exposed as device: that reported its first installId and then a different one is exposed anew at its very next evaluation, before anything has counted the reinstall")
    func reinstallAfterADeviceUnitExposesAnewAtOnce() async throws {
        let pool = try await TestDatabase.privatePool(prefix: "locgate_experiment_reinstall")
        let service = GateService(pool: pool, logger: TestDatabase.logger)
        let appID = try await TestDatabase.makeApp(pool)
        let experiments = service.experiments
        _ = try await experiments.putExperiment(
            appID: appID, key: "units", body: Self.body(Self.definition(variants: ["control", "primer"], weights: [100, 0])), actor: .cli)
        _ = try await service.events.ingest(appID: appID, submissions: Self.submissions("u", "phone", [Self.context()]))
        let first = try await experiments.evaluateExperiment(appID: appID, key: "units", userID: "u", deviceID: "phone")
        #expect(first.reason == .assigned && first.exposedAt != nil)
        // Its first installId (no reinstall), then another one (I1's reinstall). No tally runs
        // in this test's process: the evaluation alone must see the new unit.
        _ = try await service.events.ingest(appID: appID, submissions: Self.submissions("u", "phone", [Self.context(installID: "first")]))
        #expect(try await experiments.evaluateExperiment(appID: appID, key: "units", userID: "u", deviceID: "phone") == first)
        _ = try await service.events.ingest(appID: appID, submissions: Self.submissions("u", "phone", [Self.context(installID: "second")]))
        let anew = try await experiments.evaluateExperiment(appID: appID, key: "units", userID: "u", deviceID: "phone")
        #expect(anew.reason == .assigned && anew.exposedAt != nil && anew.exposedAt != first.exposedAt, "\(anew) after \(first)")
        #expect(try await Self.count(pool, "SELECT count(*) FROM experiment_exposures WHERE app_id = \(appID) AND unit = 'install:second'") == 1)
        await pool.close()
    }

    // MARK: - Stickiness and eligibility

    @Test("Sticky: eligibility is checked only until exposure; a device no longer eligible (its status changed) stays assigned, whatever the weights become; devices not eligible get the control, notEligible, and no exposure")
    func stickyPastEligibility() async throws {
        let pool = try await TestDatabase.pool()
        let service = GateService(pool: pool, logger: TestDatabase.logger)
        let appID = try await TestDatabase.makeApp(pool)
        let experiments = service.experiments
        let eligible = #", "eligible": {"platforms": ["iOS"], "statuses": ["notDetermined"], "minAppVersion": "2.0"}"#
        _ = try await experiments.putExperiment(
            appID: appID, key: "ask",
            body: Self.body(Self.definition(variants: ["control", "primer"], weights: [0, 100], extra: eligible)), actor: .cli)

        _ = try await service.events.ingest(appID: appID, submissions: Self.submissions("u", "d", [Self.context(appVersion: "2.1")]))
        let exposed = try await experiments.evaluateExperiment(appID: appID, key: "ask", userID: "u", deviceID: "d")
        #expect(exposed.variant == "primer" && exposed.reason == .assigned && exposed.exposedAt != nil, "\(exposed)")

        // Its status is no longer one the experiment admits, and the weights now send every new
        // device to the control: still its variant, assigned, its exposure's time.
        _ = try await service.events.ingest(
            appID: appID, submissions: Self.submissions("u", "d", [.authorizationRequested(.whenInUse), .promptResponded(.allowWhileUsing)]))
        _ = try await experiments.putExperiment(
            appID: appID, key: "ask",
            body: Self.body(Self.definition(variants: ["control", "primer"], weights: [100, 0], extra: eligible)), actor: .cli)
        let later = try await experiments.evaluateExperiment(appID: appID, key: "ask", userID: "u", deviceID: "d")
        #expect(later == exposed, "\(later) after \(exposed)")

        // Not eligible: another device of the same status, a device below the version floor, a
        // device of another platform, a device with no context at all.
        _ = try await service.events.ingest(appID: appID, submissions: Self.submissions(
            "v", "d", [Self.context(appVersion: "2.1"), .authorizationRequested(.whenInUse), .promptResponded(.allowWhileUsing)]))
        _ = try await service.events.ingest(appID: appID, submissions: Self.submissions("old", "d", [Self.context(appVersion: "1.9")]))
        _ = try await service.events.ingest(appID: appID, submissions: Self.submissions("ipad", "d", [Self.context(platform: .iPadOS, appVersion: "2.1")]))
        for user in ["v", "old", "ipad", "nobody"] {
            let answer = try await experiments.evaluateExperiment(appID: appID, key: "ask", userID: user, deviceID: "d")
            #expect(answer == ExperimentAnswer(experiment: "ask", variant: "control", reason: .notEligible, exposedAt: nil), "\(user): \(answer)")
        }
        #expect(try await Self.count(pool, "SELECT count(*) FROM experiment_exposures WHERE app_id = \(appID)") == 1)

        // The bulk evaluation holds every experiment, by key: running, stopped, not eligible.
        _ = try await experiments.putExperiment(
            appID: appID, key: "b-stopped", body: Self.body(Self.definition(variants: ["x", "y"], weights: [50, 50])), actor: .cli)
        _ = try await experiments.stopExperiment(appID: appID, key: "b-stopped", winner: "y", actor: .cli)
        _ = try await experiments.putExperiment(
            appID: appID, key: "c-android",
            body: Self.body(Self.definition(prompt: #""foreground""#, variants: ["dialog", "button"], weights: [50, 50], extra: #", "eligible": {"platforms": ["android"]}"#)),
            actor: .cli)
        let bulk = try await experiments.evaluateExperiments(appID: appID, userID: "u", deviceID: "d")
        #expect(bulk.map(\.experiment) == ["ask", "b-stopped", "c-android"], "\(bulk)")
        #expect(bulk.first == exposed)
        #expect(bulk.dropFirst().first == ExperimentAnswer(experiment: "b-stopped", variant: "y", reason: .stopped, exposedAt: nil))
        #expect(bulk.last == ExperimentAnswer(experiment: "c-android", variant: "dialog", reason: .notEligible, exposedAt: nil))
        #expect(try await Self.count(pool, "SELECT count(*) FROM experiment_exposures WHERE app_id = \(appID)") == 1)
        await pool.close()
    }

    // MARK: - What counts

    @Test("Results: the first answer to a prompt of the kind shown after the exposure and before the stop; inferred answers count; an Always prompt's grant is Always; rows control first with Wilson intervals, uplift and p against the control, nulls where nothing was exposed")
    func whatCounts() async throws {
        let pool = try await TestDatabase.privatePool(prefix: "locgate_experiment_counts")
        let service = GateService(pool: pool, logger: TestDatabase.logger)
        let appID = try await TestDatabase.makeApp(pool)
        let experiments = service.experiments
        // The control is listed second: the results list it first all the same.
        let variants = ["primer", "dialog", "unused"]
        func put(_ weights: [Int]) async throws {
            _ = try await experiments.putExperiment(
                appID: appID, key: "ask", body: Self.body(Self.definition(variants: variants, weights: weights, control: "dialog")), actor: .cli)
        }
        func ingest(_ user: String, _ events: [LocationEvent]) async throws {
            _ = try await service.events.ingest(appID: appID, submissions: Self.submissions(user, "phone", events))
        }
        func expose(_ user: String, _ variant: String) async throws {
            let answer = try await experiments.evaluateExperiment(appID: appID, key: "ask", userID: user, deviceID: "phone")
            #expect(answer.variant == variant && answer.reason == .assigned && answer.exposedAt != nil, "\(user): \(answer)")
        }
        let ask: [LocationEvent] = [.authorizationRequested(.whenInUse)]

        // The control's four: a grant, a refusal, an inferred grant (O2), one never asked.
        try await put([0, 100, 0])
        for user in ["c1", "c2", "c3", "c4"] {
            try await ingest(user, [Self.context()])
            try await expose(user, "dialog")
        }
        try await ingest("c1", ask + [.promptResponded(.allowWhileUsing)])
        try await ingest("c2", ask + [.promptResponded(.dontAllow)])
        try await ingest("c4", ask + [.statusObserved(.authorizedWhenInUse, accuracy: nil)])

        // The primer's four: asked before its exposure (not counted), a grant, one asked before
        // the stop and answering after it (counted: the prompt was shown while it ran), one asked
        // after the stop (not counted).
        try await put([100, 0, 0])
        try await ingest("v1", [Self.context()] + ask)
        try await expose("v1", "primer")
        try await ingest("v1", [.promptResponded(.allowWhileUsing)])
        for user in ["v2", "v3", "v4"] {
            try await ingest(user, [Self.context()])
            try await expose(user, "primer")
        }
        try await ingest("v2", ask + [.promptResponded(.allowWhileUsing)])
        try await ingest("v4", ask)
        let stopped = try await experiments.stopExperiment(appID: appID, key: "ask", winner: nil, actor: .cli)
        #expect(stopped.winner == "dialog" && stopped.state == .stopped)
        try await ingest("v4", [.promptResponded(.dontAllow)])
        try await ingest("v3", ask + [.promptResponded(.allowWhileUsing)])

        let expected = [
            "dialog": VariantCounts(variant: "dialog", exposed: 4, answered: 3, granted: 2),
            "primer": VariantCounts(variant: "primer", exposed: 4, answered: 2, granted: 1),
            "unused": VariantCounts(variant: "unused"),
        ]
        #expect(try await Self.waitForCounts(service, appID, "ask", expected) == expected)

        let results = try await experiments.experimentResults(appID: appID, key: "ask")
        #expect(results.state == .stopped && results.variants.map(\.variant) == ["dialog", "primer", "unused"])
        let control = try #require(results.variants.first)
        #expect(Self.approximately(control.grantRate, 2.0 / 3.0) && Self.approximately(control.exposedGrantRate, 0.5))
        #expect(Self.approximately(control.ci95?.low, 0.20765959880782425, within: 1e-6))
        #expect(Self.approximately(control.ci95?.high, 0.9385080559790691, within: 1e-6))
        #expect(Self.approximately(control.ci95Exposed?.low, 0.1500389877440198, within: 1e-6))
        #expect(Self.approximately(control.ci95Exposed?.high, 0.8499610122559802, within: 1e-6))
        #expect(control.uplift == nil && control.pValue == nil)
        let primer = results.variants[1]
        #expect(Self.approximately(primer.grantRate, 0.5) && Self.approximately(primer.exposedGrantRate, 0.25))
        #expect(Self.approximately(primer.ci95Exposed?.low, 0.04558726029536886, within: 1e-6))
        #expect(Self.approximately(primer.ci95Exposed?.high, 0.6993581599030918, within: 1e-6))
        #expect(Self.approximately(primer.uplift, -0.25))
        #expect(Self.approximately(primer.pValue, 0.46520881845214174, within: 1e-6), "\(String(describing: primer.pValue))")
        let unused = results.variants[2]
        #expect(unused.exposed == 0 && unused.grantRate == nil && unused.ci95 == nil && unused.exposedGrantRate == nil)
        #expect(unused.ci95Exposed == nil && unused.uplift == nil && unused.pValue == nil)
        await pool.close()
    }

    @Test("An Always prompt's grant is Always: kept While Using at the upgrade is answered, not granted; Allow Always is granted; an answer to a prompt of another kind does not count")
    func alwaysMeansAlways() async throws {
        let pool = try await TestDatabase.privatePool(prefix: "locgate_experiment_always")
        let service = GateService(pool: pool, logger: TestDatabase.logger)
        let appID = try await TestDatabase.makeApp(pool)
        let experiments = service.experiments
        _ = try await experiments.putExperiment(
            appID: appID, key: "upgrade",
            body: Self.body(Self.definition(prompt: #""alwaysUpgrade""#, variants: ["control", "primer"], weights: [100, 0])), actor: .cli)
        func ingest(_ user: String, _ events: [LocationEvent]) async throws {
            _ = try await service.events.ingest(appID: appID, submissions: Self.submissions(user, "phone", events))
        }
        for user in ["keeps", "upgrades"] {
            try await ingest(user, [Self.context()])
            let answer = try await experiments.evaluateExperiment(appID: appID, key: "upgrade", userID: user, deviceID: "phone")
            #expect(answer.reason == .assigned && answer.variant == "control")
            // When In Use first: a prompt of another kind, granted, which counts for nothing here.
            try await ingest(user, [.authorizationRequested(.whenInUse), .promptResponded(.allowWhileUsing)])
        }
        try await ingest("keeps", [.authorizationRequested(.always), .promptResponded(.keepOnlyWhileUsing)])
        try await ingest("upgrades", [.authorizationRequested(.always), .promptResponded(.changeToAlwaysAllow)])
        let expected = [
            "control": VariantCounts(variant: "control", exposed: 2, answered: 2, granted: 1),
            "primer": VariantCounts(variant: "primer"),
        ]
        #expect(try await Self.waitForCounts(service, appID, "upgrade", expected) == expected)
        #expect(try await Self.count(
            pool, "SELECT count(*) FROM experiment_exposures WHERE app_id = \(appID) AND user_id = 'keeps' AND answer_prompt = 'alwaysUpgrade' AND NOT granted") == 1)
        await pool.close()
    }

    // MARK: - Erasure and retention

    @Test("Results are costly work, as analytics are: with two of an app's analytics requests running, its results are 429 rateLimited at once, another app's are not; once one ends they answer")
    func resultsAreBoundedPerApp() async throws {
        let pool = try await TestDatabase.pool()
        let service = GateService(pool: pool, logger: TestDatabase.logger)
        let busy = try await TestDatabase.makeApp(pool), other = try await TestDatabase.makeApp(pool)
        for appID in [busy, other] {
            _ = try await service.experiments.putExperiment(
                appID: appID, key: "ask", body: Self.body(Self.definition(variants: ["control", "primer"], weights: [50, 50])), actor: .cli)
        }
        let running = try (0..<CostlyWork.perApp).map { _ in try service.analytics.costly.admit(.analytics, appID: busy) }
        do {
            _ = try await service.experiments.experimentResults(appID: busy, key: "ask")
            Issue.record("results answered beyond the app's costly requests")
        } catch {
            #expect(error.code == .rateLimited, "\(error)")
        }
        #expect(try await service.experiments.experimentResults(appID: other, key: "ask").variants.count == 2)
        running[0].release()
        #expect(try await service.experiments.experimentResults(appID: busy, key: "ask").variants.count == 2)
        running[1].release()
        await pool.close()
    }

    @Test("Retention erases no answer the experiments' tally has not counted, though the analytics rollup has: the answer stays in the log until the tally counts it, then goes, and the results keep it")
    func retentionWaitsForTheTally() async throws {
        let pool = try await TestDatabase.privatePool(prefix: "locgate_experiment_retention_tally")
        let service = GateService(pool: pool, logger: TestDatabase.logger)
        let appID = try await TestDatabase.makeApp(pool)
        _ = try await service.experiments.putExperiment(
            appID: appID, key: "ask", body: Self.body(Self.definition(variants: ["control", "primer"], weights: [100, 0])), actor: .cli)
        _ = try await service.events.ingest(appID: appID, submissions: Self.submissions("u", "phone", [Self.context()]))
        let exposed = try await service.experiments.evaluateExperiment(appID: appID, key: "ask", userID: "u", deviceID: "phone")
        #expect(exposed.reason == .assigned)
        _ = try await service.events.ingest(
            appID: appID, submissions: Self.submissions("u", "phone", [.authorizationRequested(.whenInUse), .promptResponded(.allowWhileUsing)]))
        try await service.retention.setRetentionDays(appID: appID, days: 1, actor: .cli)
        // The rollup has counted everything; the tally, which no server runs here, nothing.
        _ = try await AnalyticsRollup(pool: pool, logger: TestDatabase.logger).catchUp(waitForInFlightCommits: true, patience: .seconds(30))
        let early = try await Retention(pool: pool, logger: TestDatabase.logger).run(now: Date().addingTimeInterval(2 * 86_400), appID: appID)
        #expect(early.events == 0, "\(early)")
        #expect(try await Self.count(pool, "SELECT count(*) FROM events WHERE app_id = \(appID)") == 3)
        // A run as the service makes one: both readers count first, then the events go.
        let run = try await service.retention.runRetention(appID: appID, now: Date().addingTimeInterval(2 * 86_400))
        #expect(run.events == 3, "\(run)")
        #expect(try await Self.count(pool, "SELECT count(*) FROM events WHERE app_id = \(appID)") == 0)
        #expect(try await Self.counts(service, appID, "ask")["control"] == VariantCounts(variant: "control", exposed: 1, answered: 1, granted: 1))
        await pool.close()
    }

    @Test("Erasing a device removes its exposures and keeps the counts; retention drops the exposures of experiments stopped before its cut, keeps those of running ones and of ones stopped after it, and keeps every count")
    func erasureAndRetention() async throws {
        let pool = try await TestDatabase.privatePool(prefix: "locgate_experiment_retention")
        let service = GateService(pool: pool, logger: TestDatabase.logger)
        let appID = try await TestDatabase.makeApp(pool)
        let experiments = service.experiments
        for key in ["done", "live"] {
            _ = try await experiments.putExperiment(
                appID: appID, key: key, body: Self.body(Self.definition(variants: ["control", "primer"], weights: [100, 0])), actor: .cli)
        }
        for user in ["a", "b"] {
            _ = try await service.events.ingest(appID: appID, submissions: Self.submissions(user, "phone", [Self.context()]))
            _ = try await service.events.ingest(appID: appID, submissions: Self.submissions(user, "tablet", [Self.context()]))
            for key in ["done", "live"] {
                for device in ["phone", "tablet"] {
                    _ = try await experiments.evaluateExperiment(appID: appID, key: key, userID: user, deviceID: device)
                }
            }
        }
        func exposures(_ key: String) async throws -> Int64 {
            try await Self.count(pool, "SELECT count(*) FROM experiment_exposures WHERE app_id = \(appID) AND experiment_key = \(key)")
        }
        #expect(try await exposures("done") == 4)
        #expect(try await exposures("live") == 4)

        // One device of a: its exposures go, a's other device and the counts stay.
        let erasure = try await service.erasure.requestDeviceErasure(appID: appID, userID: "a", deviceID: "tablet", actor: .cli)
        _ = try await ErasurePagingTests.stepsUntilDone(service, appID, erasure.id)
        #expect(try await Self.count(pool, "SELECT count(*) FROM experiment_exposures WHERE app_id = \(appID) AND user_id = 'a' AND device_id = 'tablet'") == 0)
        #expect(try await Self.count(pool, "SELECT count(*) FROM experiment_exposures WHERE app_id = \(appID) AND user_id = 'a' AND device_id = 'phone'") == 2)
        #expect(try await Self.counts(service, appID, "done")["control"]?.exposed == 4)

        _ = try await experiments.stopExperiment(appID: appID, key: "done", winner: nil, actor: .cli)
        try await service.retention.setRetentionDays(appID: appID, days: 1, actor: .cli)
        // A cut before the stop (now + 12 h - 1 day): the stopped experiment keeps its exposures.
        _ = try await service.retention.runRetention(now: Date().addingTimeInterval(12 * 3600))
        #expect(try await exposures("done") == 3)
        #expect(try await exposures("live") == 3)
        // A cut after the stop (now + 2 days - 1 day): its exposures go, the running one's stay.
        _ = try await service.retention.runRetention(now: Date().addingTimeInterval(2 * 86_400))
        #expect(try await exposures("done") == 0)
        #expect(try await exposures("live") == 3)
        #expect(try await Self.counts(service, appID, "done")["control"]?.exposed == 4)
        #expect(try await Self.counts(service, appID, "live")["control"]?.exposed == 4)
        // A stopped experiment still answers its winner; the exposure it forgot no longer shows.
        let answer = try await GateService(pool: pool, logger: TestDatabase.logger).experiments
            .evaluateExperiment(appID: appID, key: "done", userID: "b", deviceID: "phone")
        #expect(answer == ExperimentAnswer(experiment: "done", variant: "control", reason: .stopped, exposedAt: nil), "\(answer)")
        await pool.close()
    }

    // MARK: - The guard

    @Test("The guard stops once when two servers' guardians check at the same time: one stop, one audit entry by {\"guard\": true} with the variant, the exposed grant rates and p; a later operator stop is 409 experimentStopped")
    func guardStopsOnceAcrossServers() async throws {
        let pool = try await TestDatabase.privatePool(prefix: "locgate_experiment_guard_race", size: 6)
        let service = GateService(pool: pool, logger: TestDatabase.logger)
        let appID = try await TestDatabase.makeApp(pool)
        let experiments = service.experiments
        let guarded = #", "guard": {"maxDrop": 0.1, "minAnswered": 20}"#
        func put(_ weights: [Int]) async throws {
            _ = try await experiments.putExperiment(
                appID: appID, key: "risky",
                body: Self.body(Self.definition(variants: ["control", "worse"], weights: weights, extra: guarded)), actor: .cli)
        }
        let controlUsers = (0..<30).map { "c-\($0)" }, worseUsers = (0..<30).map { "w-\($0)" }
        _ = try await service.events.ingest(appID: appID, submissions: (controlUsers + worseUsers).flatMap { Self.submissions($0, "phone", [Self.context()]) })
        try await put([100, 0])
        for user in controlUsers { _ = try await experiments.evaluateExperiment(appID: appID, key: "risky", userID: user, deviceID: "phone") }
        try await put([0, 100])
        for user in worseUsers { _ = try await experiments.evaluateExperiment(appID: appID, key: "risky", userID: user, deviceID: "phone") }
        // The control's 30 all answer, 24 grant; the worse variant's 30 answer, 3 grant.
        var answers: [EventSubmission] = []
        for (index, user) in controlUsers.enumerated() {
            answers += Self.submissions(user, "phone", [.authorizationRequested(.whenInUse), .promptResponded(index < 24 ? PromptChoice.allowWhileUsing : PromptChoice.dontAllow)])
        }
        for (index, user) in worseUsers.enumerated() {
            answers += Self.submissions(user, "phone", [.authorizationRequested(.whenInUse), .promptResponded(index < 3 ? PromptChoice.allowWhileUsing : PromptChoice.dontAllow)])
        }
        _ = try await service.events.ingest(appID: appID, submissions: answers)
        let expected = [
            "control": VariantCounts(variant: "control", exposed: 30, answered: 30, granted: 24),
            "worse": VariantCounts(variant: "worse", exposed: 30, answered: 30, granted: 3),
        ]
        #expect(try await Self.waitForCounts(service, appID, "risky", expected) == expected)

        // Two servers, each with its guardian, checking at once, again and again until it stops.
        let first = service.experiments.guardian(logger: TestDatabase.logger)
        let second = GateService(pool: pool, logger: TestDatabase.logger).experiments.guardian(logger: TestDatabase.logger)
        var stops = 0
        let stoppedInTime = try await waitUntil(timeout: .seconds(60), poll: .milliseconds(20)) {
            async let one = first.checkDue(dueAfter: .zero)
            async let two = second.checkDue(dueAfter: .zero)
            let (byFirst, bySecond) = try await (one, two)
            stops += byFirst.count + bySecond.count
            // Read past the caches: the guardian that stopped it told only its own server's
            // catalog, and no server here listens for the others' changes.
            return try await Self.count(
                pool, "SELECT count(*) FROM experiments WHERE app_id = \(appID) AND key = 'risky' AND state = 'stopped'") == 1
        }
        #expect(stoppedInTime)
        stops += try await first.checkDue(dueAfter: .zero).count + second.checkDue(dueAfter: .zero).count
        #expect(stops == 1, "\(stops) stops")

        let stopped = try await GateService(pool: pool, logger: TestDatabase.logger).experiments.experiment(appID: appID, key: "risky")
        #expect(stopped.stopReason == .guard && stopped.winner == "control" && stopped.stoppedAt != nil)
        let entries = try await service.adminAudit.entries(appID: appID, after: nil, limit: 1000).entries.filter { $0.action == "experimentStopped" }
        #expect(entries.count == 1, "\(entries)")
        let entry = try #require(entries.first)
        #expect(entry.actor == .guard && entry.target == "risky")
        #expect(Set(entry.details.keys) == ["variant", "controlRate", "variantRate", "p"], "\(entry.details)")
        #expect(entry.details["variant"] == .string("worse"))
        #expect(Self.approximately(Self.number(entry.details["controlRate"]), 0.8, within: 1e-9))
        #expect(Self.approximately(Self.number(entry.details["variantRate"]), 0.1, within: 1e-9))
        let test = try #require(TwoProportionZTest(controlSuccesses: 24, controlTrials: 30, variantSuccesses: 3, variantTrials: 30))
        #expect(Self.approximately(Self.number(entry.details["p"]), test.twoSidedP / 2, within: 1e-12), "\(entry.details)")
        #expect((Self.number(entry.details["p"]) ?? 1) < 0.01)

        do {
            _ = try await experiments.stopExperiment(appID: appID, key: "risky", winner: "worse", actor: .cli)
            Issue.record("a stopped experiment was stopped again")
        } catch {
            #expect(ServiceError.from(error).code == .experimentStopped, "\(error)")
        }
        #expect(try await service.adminAudit.entries(appID: appID, after: nil, limit: 1000).entries.filter { $0.action == "experimentStopped" }.count == 1)
        await pool.close()
    }
}
