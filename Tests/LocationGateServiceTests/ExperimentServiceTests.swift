import EventLog
import Foundation
import LocationAuthorization
import LocationGateService
import LocationGateTestSupport
import PostgresClient
import Testing

/// Prompt experiments against a real PostgreSQL (SPEC §16): definitions and their refusals,
/// sticky exposures, results counted from the log as it arrives, erasure, and the guard. The
/// tests that count have databases of their own: the tally's checkpoint serves every app of
/// its database.
@Suite("Experiments: definitions, sticky exposures, results from counts, erasure, the guard", .timeLimit(.minutes(3)))
struct ExperimentServiceTests {
    static let fiftyFifty = #"{"prompt": "whenInUse", "variants": [{"key": "control", "weight": 50}, {"key": "priming", "weight": 50}]}"#

    static func body(_ text: String) -> [UInt8] { Array(text.utf8) }

    /// The `ServiceError` a call threw; nil when it did not throw.
    static func refusal<T>(_ call: () async throws -> T) async -> ServiceError? {
        do {
            _ = try await call()
            return nil
        } catch {
            return ServiceError.from(error)
        }
    }

    static func submissions(_ user: String, _ device: String, _ events: [LocationEvent]) -> [EventSubmission] {
        events.map { event in EventSubmission(id: UUID(), userId: user, deviceId: device, occurredAt: Date(), event: event) }
    }

    static func context(installID: String? = nil, platform: Platform = .iOS) -> LocationEvent {
        .contextReported(DeviceContext(platform: platform, osVersion: OSVersion(17, 4), appVersion: "1.0", installID: installID))
    }

    static func count(_ pool: PostgresConnectionPool, _ query: PostgresQuery) async throws -> Int64 {
        try await pool.query(query).first?.decode(0, as: Int64.self) ?? -1
    }

    @Test("PUT creates (201) and replaces (200); a running experiment keeps its variants, prompt and control (409 experimentRunning); a key is a feature's or an experiment's (409 keyInUse both ways); the list is sorted by key; a stop's winner must be a variant (422), a stopped experiment takes no change (409 experimentStopped); DELETE removes it; each change is in the audit trail")
    func definitions() async throws {
        let pool = try await TestDatabase.pool()
        let service = GateService(pool: pool, logger: TestDatabase.logger)
        let appID = try await TestDatabase.makeApp(pool)
        let experiments = service.experiments

        let (created, isNew) = try await experiments.putExperiment(appID: appID, key: "ask-late", body: Self.body(Self.fiftyFifty), actor: .cli)
        #expect(isNew && created.state == .running && created.definition.control == "control" && created.winner == nil)
        let reweighted = #"{"description": "later", "prompt": "whenInUse", "variants": [{"key": "control", "weight": 20}, {"key": "priming", "weight": 80}]}"#
        let (replaced, replacedNew) = try await experiments.putExperiment(appID: appID, key: "ask-late", body: Self.body(reweighted), actor: .cli)
        #expect(!replacedNew && replaced.definition.variants.map(\.weight) == [20, 80] && replaced.definition.description == "later")
        #expect(replaced.createdAt == created.createdAt)

        let renamed = #"{"prompt": "whenInUse", "variants": [{"key": "control", "weight": 50}, {"key": "other", "weight": 50}]}"#
        #expect(await Self.refusal { try await experiments.putExperiment(appID: appID, key: "ask-late", body: Self.body(renamed), actor: .cli) }?.code == .experimentRunning)
        let otherPrompt = #"{"prompt": "alwaysUpgrade", "variants": [{"key": "control", "weight": 50}, {"key": "priming", "weight": 50}]}"#
        #expect(await Self.refusal { try await experiments.putExperiment(appID: appID, key: "ask-late", body: Self.body(otherPrompt), actor: .cli) }?.code == .experimentRunning)
        let badWeights = #"{"prompt": "whenInUse", "variants": [{"key": "control", "weight": 50}, {"key": "priming", "weight": 40}]}"#
        let weightRefusal = await Self.refusal { try await experiments.putExperiment(appID: appID, key: "new-one", body: Self.body(badWeights), actor: .cli) }
        #expect(weightRefusal?.code == .validationFailed && weightRefusal?.message.hasPrefix("variants") == true, "\(String(describing: weightRefusal))")
        #expect(await Self.refusal { try await experiments.experiment(appID: appID, key: "new-one") }?.code == .notFound)

        // A key is a feature's or an experiment's.
        let feature = try FeatureCatalog.parseDefinition(key: "ask-late", body: Data(#"{"requires": "whenInUse"}"#.utf8))
        #expect(await Self.refusal { try await service.catalog.putFeature(appID: appID, feature: feature, actor: .cli) }?.code == .keyInUse)
        let map = try FeatureCatalog.parseDefinition(key: "map", body: Data(#"{"requires": "whenInUse"}"#.utf8))
        #expect(try await service.catalog.putFeature(appID: appID, feature: map, actor: .cli))
        #expect(await Self.refusal { try await experiments.putExperiment(appID: appID, key: "map", body: Self.body(Self.fiftyFifty), actor: .cli) }?.code == .keyInUse)

        _ = try await experiments.putExperiment(appID: appID, key: "a-first", body: Self.body(Self.fiftyFifty), actor: .cli)
        #expect(try await experiments.experiments(appID: appID).map(\.key) == ["a-first", "ask-late"])

        let wrongWinner = await Self.refusal { try await experiments.stopExperiment(appID: appID, key: "ask-late", winner: "nope", actor: .cli) }
        #expect(wrongWinner?.code == .validationFailed && wrongWinner?.message.hasPrefix("winner") == true, "\(String(describing: wrongWinner))")
        let stopped = try await experiments.stopExperiment(appID: appID, key: "ask-late", winner: nil, actor: .cli)
        #expect(stopped.state == .stopped && stopped.winner == "control" && stopped.stopReason == .operator && stopped.stoppedAt != nil)
        #expect(await Self.refusal { try await experiments.stopExperiment(appID: appID, key: "ask-late", winner: nil, actor: .cli) }?.code == .experimentStopped)
        #expect(await Self.refusal { try await experiments.putExperiment(appID: appID, key: "ask-late", body: Self.body(reweighted), actor: .cli) }?.code == .experimentStopped)
        #expect(try await experiments.experiment(appID: appID, key: "ask-late").state == .stopped)

        try await experiments.deleteExperiment(appID: appID, key: "ask-late", actor: .cli)
        #expect(await Self.refusal { try await experiments.experiment(appID: appID, key: "ask-late") }?.code == .notFound)
        #expect(await Self.refusal { try await experiments.deleteExperiment(appID: appID, key: "ask-late", actor: .cli) }?.code == .notFound)
        #expect(await Self.refusal { try await experiments.stopExperiment(appID: appID, key: "ask-late", winner: nil, actor: .cli) }?.code == .notFound)

        let trail = try await service.adminAudit.entries(appID: appID, after: nil, limit: 1000).entries.filter { $0.target == "ask-late" }
        #expect(trail.map(\.action) == ["experimentPut", "experimentPut", "experimentStopped", "experimentDeleted"], "\(trail.map(\.action))")
        #expect(trail.first?.details["created"] == .bool(true) && trail.dropFirst().first?.details["created"] == .bool(false))
        #expect(trail.dropFirst(2).first?.details["winner"] == .string("control"))
        await pool.close()
    }

    @Test("An app has at most 50 experiments: a 51st is a 422 naming key, and replacing one of the 50 still works")
    func fiftyPerApp() async throws {
        let pool = try await TestDatabase.pool()
        let service = GateService(pool: pool, logger: TestDatabase.logger)
        let appID = try await TestDatabase.makeApp(pool)
        for index in 0..<50 {
            _ = try await service.experiments.putExperiment(appID: appID, key: "e\(index)", body: Self.body(Self.fiftyFifty), actor: .cli)
        }
        let refused = await Self.refusal {
            try await service.experiments.putExperiment(appID: appID, key: "e50", body: Self.body(Self.fiftyFifty), actor: .cli)
        }
        #expect(refused?.code == .validationFailed && refused?.message.hasPrefix("key") == true, "\(String(describing: refused))")
        #expect(try await service.experiments.putExperiment(appID: appID, key: "e7", body: Self.body(Self.fiftyFifty), actor: .cli).created == false)
        await pool.close()
    }

    @Test("An exposure is sticky: the variant of the unit's bucket, recorded once (exposed 1), kept when the weights change and by another server; a device not eligible gets the control and no exposure; after a stop every device gets the winner and nothing is exposed")
    func stickyExposure() async throws {
        let pool = try await TestDatabase.pool()
        let service = GateService(pool: pool, logger: TestDatabase.logger)
        let appID = try await TestDatabase.makeApp(pool)
        let experiments = service.experiments
        let (experiment, _) = try await experiments.putExperiment(appID: appID, key: "priming", body: Self.body(Self.fiftyFifty), actor: .cli)
        _ = try await service.events.ingest(appID: appID, submissions: Self.submissions("u1", "d1", [Self.context(installID: "install-one")]))

        let first = try await experiments.evaluateExperiment(appID: appID, key: "priming", userID: "u1", deviceID: "d1")
        let expected = ExperimentBuckets(appID: appID, definition: experiment.definition).variant(for: .install("install-one"))
        #expect(first.variant == expected && first.reason == .assigned && first.exposedAt != nil, "\(first)")
        #expect(try await Self.count(pool, "SELECT count(*) FROM experiment_exposures WHERE app_id = \(appID) AND unit = 'install:install-one'") == 1)

        // Every device of the bucket's variant would now go to the other one: the exposed one stays.
        let other = first.variant == "control" ? "priming" : "control"
        let moved = #"{"prompt": "whenInUse", "variants": [{"key": "control", "weight": \#(other == "control" ? 100 : 0)}, {"key": "priming", "weight": \#(other == "priming" ? 100 : 0)}]}"#
        _ = try await experiments.putExperiment(appID: appID, key: "priming", body: Self.body(moved), actor: .cli)
        let again = try await experiments.evaluateExperiment(appID: appID, key: "priming", userID: "u1", deviceID: "d1")
        #expect(again == first, "\(again) after \(first)")
        let elsewhere = try await GateService(pool: pool, logger: TestDatabase.logger).experiments
            .evaluateExperiment(appID: appID, key: "priming", userID: "u1", deviceID: "d1")
        #expect(elsewhere == first)
        let fresh = try await experiments.evaluateExperiment(appID: appID, key: "priming", userID: "u2", deviceID: "d2")
        #expect(fresh.variant == other && fresh.reason == .assigned)
        let bulk = try await experiments.evaluateExperiments(appID: appID, userID: "u1", deviceID: "d1")
        #expect(bulk == [first])
        let results = try await experiments.experimentResults(appID: appID, key: "priming")
        #expect(results.variants.map(\.exposed).reduce(0, +) == 2 && results.variants.first?.variant == "control")

        // Eligibility: Android only. An iOS device gets the control and no exposure.
        let androidOnly = #"{"prompt": "foreground", "variants": [{"key": "dialog", "weight": 0}, {"key": "button", "weight": 100}], "eligible": {"platforms": ["android"]}}"#
        _ = try await experiments.putExperiment(appID: appID, key: "button", body: Self.body(androidOnly), actor: .cli)
        let notEligible = try await experiments.evaluateExperiment(appID: appID, key: "button", userID: "u1", deviceID: "d1")
        #expect(notEligible == ExperimentAnswer(experiment: "button", variant: "dialog", reason: .notEligible, exposedAt: nil))
        #expect(try await Self.count(pool, "SELECT count(*) FROM experiment_exposures WHERE app_id = \(appID) AND experiment_key = 'button'") == 0)
        #expect(await Self.refusal { try await experiments.evaluateExperiment(appID: appID, key: "no-such", userID: "u1", deviceID: "d1") }?.code == .notFound)

        // A stop: the winner for everyone, the exposure's time kept, nothing new recorded.
        _ = try await experiments.stopExperiment(appID: appID, key: "priming", winner: "priming", actor: .cli)
        let afterStop = try await experiments.evaluateExperiment(appID: appID, key: "priming", userID: "u1", deviceID: "d1")
        #expect(afterStop == ExperimentAnswer(experiment: "priming", variant: "priming", reason: .stopped, exposedAt: first.exposedAt))
        let newcomer = try await experiments.evaluateExperiment(appID: appID, key: "priming", userID: "u3", deviceID: "d3")
        #expect(newcomer == ExperimentAnswer(experiment: "priming", variant: "priming", reason: .stopped, exposedAt: nil))
        #expect(try await Self.count(pool, "SELECT count(*) FROM experiment_exposures WHERE app_id = \(appID) AND experiment_key = 'priming'") == 2)
        await pool.close()
    }

    @Test("Results count each exposed unit's first answer to a prompt shown after its exposure: an answer to a prompt shown before does not count, nor does a second answer; erasing a person removes their exposures and keeps the counts")
    func resultsAndErasure() async throws {
        let pool = try await TestDatabase.privatePool(prefix: "locgate_experiment_results")
        let service = GateService(pool: pool, logger: TestDatabase.logger)
        let appID = try await TestDatabase.makeApp(pool)
        let experiments = service.experiments
        // Everyone in the control, so that the counts do not depend on buckets.
        let definition = #"{"prompt": ["whenInUse", "alwaysUpgrade"], "variants": [{"key": "control", "weight": 100}, {"key": "priming", "weight": 0}]}"#
        _ = try await experiments.putExperiment(appID: appID, key: "ask", body: Self.body(definition), actor: .cli)
        func ingest(_ user: String, _ events: [LocationEvent]) async throws {
            _ = try await service.events.ingest(appID: appID, submissions: Self.submissions(user, "phone", events))
        }
        func expose(_ user: String) async throws {
            let answer = try await experiments.evaluateExperiment(appID: appID, key: "ask", userID: user, deviceID: "phone")
            #expect(answer.reason == .assigned && answer.variant == "control" && answer.exposedAt != nil)
        }
        // Shown before the exposure, answered after: not counted.
        try await ingest("early", [Self.context(), .authorizationRequested(.whenInUse)])
        try await expose("early")
        try await ingest("early", [.promptResponded(.allowWhileUsing)])
        // Granted.
        try await ingest("granter", [Self.context()])
        try await expose("granter")
        try await ingest("granter", [.authorizationRequested(.whenInUse), .promptResponded(.allowWhileUsing)])
        // Refused.
        try await ingest("refuser", [Self.context()])
        try await expose("refuser")
        try await ingest("refuser", [.authorizationRequested(.whenInUse), .promptResponded(.dontAllow)])
        // Granted, then a second answer (the Always upgrade, kept While Using): only the first counts.
        try await ingest("twice", [Self.context()])
        try await expose("twice")
        try await ingest("twice", [.authorizationRequested(.whenInUse), .promptResponded(.allowWhileUsing)])
        try await ingest("twice", [.authorizationRequested(.always), .promptResponded(.keepOnlyWhileUsing)])
        // Answered before any exposure, never evaluated: nothing.
        try await ingest("bystander", [Self.context(), .authorizationRequested(.whenInUse), .promptResponded(.allowWhileUsing)])

        let expected = VariantCounts(variant: "control", exposed: 4, answered: 3, granted: 2)
        func controlCounts() async throws -> VariantCounts? {
            let results = try await experiments.experimentResults(appID: appID, key: "ask")
            guard let row = results.variants.first else { return nil }
            return VariantCounts(variant: row.variant, exposed: row.exposed, answered: row.answered, granted: row.granted)
        }
        // The tally reads below the cluster's oldest writing transaction, which other tests'
        // databases may hold back: wait for the counts, with a deadline.
        let counted = try await waitUntil(timeout: .seconds(60), poll: .milliseconds(50)) { try await controlCounts() == expected }
        let finalCounts = try await controlCounts()
        #expect(counted, "\(String(describing: finalCounts))")
        let results = try await experiments.experimentResults(appID: appID, key: "ask")
        #expect(results.state == .running && results.variants.map(\.variant) == ["control", "priming"])
        #expect(results.variants.first?.grantRate == 2.0 / 3.0 && results.variants.first?.exposedGrantRate == 0.5)
        #expect(results.variants.last?.exposed == 0 && results.variants.last?.uplift == nil)
        #expect(try await Self.count(
            pool, "SELECT count(*) FROM experiment_exposures WHERE app_id = \(appID) AND answered AND unit = 'device:twice/phone' AND answer_prompt = 'whenInUse' AND granted") == 1)

        // Erasure: the person's exposure goes, the counts stay.
        let erasure = try await service.erasure.requestErasure(appID: appID, userID: "granter", actor: .cli)
        _ = try await ErasurePagingTests.stepsUntilDone(service, appID, erasure.id)
        #expect(try await Self.count(pool, "SELECT count(*) FROM experiment_exposures WHERE app_id = \(appID) AND user_id = 'granter'") == 0)
        #expect(try await Self.count(pool, "SELECT count(*) FROM experiment_exposures WHERE app_id = \(appID)") == 3)
        #expect(try await controlCounts() == expected)
        // The erased device is a new one: evaluated again, it is exposed anew.
        let anew = try await experiments.evaluateExperiment(appID: appID, key: "ask", userID: "granter", deviceID: "phone")
        #expect(anew.reason == .assigned && anew.exposedAt != nil)
        await pool.close()
    }

    @Test("The guard stops a clearly worse variant: winner the control, stopReason guard, one audit entry by the guard with the rates and p")
    func guardStops() async throws {
        let pool = try await TestDatabase.privatePool(prefix: "locgate_experiment_guard")
        let service = GateService(pool: pool, logger: TestDatabase.logger)
        let appID = try await TestDatabase.makeApp(pool)
        let experiments = service.experiments
        let definition = #"{"prompt": "whenInUse", "variants": [{"key": "control", "weight": 50}, {"key": "worse", "weight": 50}], "guard": {"maxDrop": 0.05, "minAnswered": 20}}"#
        _ = try await experiments.putExperiment(appID: appID, key: "risky", body: Self.body(definition), actor: .cli)
        let users = (0..<120).map { "user-\($0)" }
        _ = try await service.events.ingest(appID: appID, submissions: users.flatMap { Self.submissions($0, "phone", [Self.context()]) })
        var answers: [EventSubmission] = []
        var exposed: [String: Int] = [:]
        for user in users {
            let answer = try await experiments.evaluateExperiment(appID: appID, key: "risky", userID: user, deviceID: "phone")
            exposed[answer.variant, default: 0] += 1
            // The control's devices grant, the worse variant's refuse.
            let choice: PromptChoice = answer.variant == "control" ? .allowWhileUsing : .dontAllow
            answers += Self.submissions(user, "phone", [.authorizationRequested(.whenInUse), .promptResponded(choice)])
        }
        try #require((exposed["control"] ?? 0) >= 20 && (exposed["worse"] ?? 0) >= 20, "\(exposed)")
        _ = try await service.events.ingest(appID: appID, submissions: answers)

        let guardian = service.experiments.guardian(logger: TestDatabase.logger)
        // The guard counts what the tally has read, which waits for the cluster's horizon.
        var stops: [(appID: UUID, key: String)] = []
        let stoppedInTime = try await waitUntil(timeout: .seconds(60), poll: .milliseconds(50)) {
            stops += try await guardian.checkDue(dueAfter: .zero)
            return try await experiments.experiment(appID: appID, key: "risky").state == .stopped
        }
        #expect(stoppedInTime)
        #expect(stops.count == 1 && stops.first?.key == "risky")
        let stopped = try await experiments.experiment(appID: appID, key: "risky")
        #expect(stopped.stopReason == .guard && stopped.winner == "control")
        #expect(try await guardian.checkDue(dueAfter: .zero).isEmpty)

        let entries = try await service.adminAudit.entries(appID: appID, after: nil, limit: 1000).entries.filter { $0.action == "experimentStopped" }
        #expect(entries.count == 1)
        let entry = try #require(entries.first)
        #expect(entry.actor == .guard && entry.target == "risky")
        #expect(Set(entry.details.keys) == ["variant", "controlRate", "variantRate", "p"] && entry.details["variant"] == .string("worse"))
        #expect(entry.details["variantRate"] == .int(0) || entry.details["variantRate"] == .number(0))
        let after = try await experiments.evaluateExperiment(appID: appID, key: "risky", userID: "user-0", deviceID: "phone")
        #expect(after.variant == "control" && after.reason == .stopped && after.exposedAt != nil)
        await pool.close()
    }
}
