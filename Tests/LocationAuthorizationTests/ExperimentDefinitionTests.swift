import Foundation
import LocationGateJSON
import Testing

@testable import LocationAuthorization

/// SPEC §16 "Experiments": a definition's checks, each naming its field; its stored and API
/// form; what a running experiment's PUT may change; eligibility; stops; evaluation.
@Suite("Experiments: definitions, changes, eligibility, evaluation", .timeLimit(.minutes(1)))
struct ExperimentDefinitionTests {
    static let twoVariants = #"{"prompt": "whenInUse", "variants": [{"key": "dialog", "weight": 50}, {"key": "primer", "weight": 50}]}"#

    func definition(_ body: String, key: String = "onboarding-primer") throws -> ExperimentDefinition {
        try ExperimentDefinition(key: key, body: Data(body.utf8))
    }

    /// The error a body is refused with; nil (and an issue) when it is accepted.
    func refusal(_ body: String, key: String = "onboarding-primer", sourceLocation: SourceLocation = #_sourceLocation) -> EventValidationError? {
        do {
            _ = try ExperimentDefinition(key: key, body: Data(body.utf8))
            Issue.record("accepted: \(body)", sourceLocation: sourceLocation)
            return nil
        } catch {
            return error
        }
    }

    func simple(_ variants: [(String, Int)] = [("dialog", 50), ("primer", 50)], control: String? = nil) throws -> ExperimentDefinition {
        try ExperimentDefinition(
            key: "onboarding-primer", prompt: .one(.whenInUse), variants: variants.map { ExperimentVariant(key: $0.0, weight: $0.1) },
            control: control)
    }

    @Test("Defaults: description empty, control the first variant, everyone eligible, no guard")
    func defaults() throws {
        let parsed = try definition(Self.twoVariants)
        #expect(parsed.key == "onboarding-primer")
        #expect(parsed.description == "")
        #expect(parsed.prompt == .one(.whenInUse))
        #expect(parsed.variants == [ExperimentVariant(key: "dialog", weight: 50), ExperimentVariant(key: "primer", weight: 50)])
        #expect(parsed.control == "dialog")
        #expect(parsed.eligibility.admitsEveryone)
        #expect(parsed.guard == nil)
    }

    @Test("Every field given, read back as given; a guard's minAnswered defaults to 100")
    func everyField() throws {
        let parsed = try definition(#"""
            {"description": "Priming screen before the dialog", "prompt": ["whenInUse", "locationButton"],
             "variants": [{"key": "dialog", "weight": 34}, {"key": "primer", "weight": 33.0}, {"key": "button", "weight": 33}],
             "control": "primer",
             "eligible": {"platforms": ["iOS", "android", "iOS"], "statuses": ["notDetermined"], "minAppVersion": "5.2"},
             "guard": {"maxDrop": 0.05}}
            """#)
        #expect(parsed.description == "Priming screen before the dialog")
        #expect(parsed.prompt == .anyOf([.whenInUse, .locationButton]))
        #expect(parsed.variants.map(\.weight) == [34, 33, 33])
        #expect(parsed.control == "primer")
        #expect(parsed.eligibility.platforms == [.iOS, .android])
        #expect(parsed.eligibility.statuses == [.notDetermined])
        #expect(parsed.eligibility.minAppVersion == AppVersion("5.2"))
        #expect(parsed.guard?.maxDrop == 0.05)
        #expect(parsed.guard?.minAnswered == 100)
        #expect(parsed.variantsControlFirst.map(\.key) == ["primer", "dialog", "button"])
    }

    @Test("The stored form reads back as the same definition, with defaults and nulls written out")
    func roundTrip() throws {
        for body in [
            Self.twoVariants,
            #"""
            {"prompt": ["alwaysUpgrade"], "variants": [{"key": "a", "weight": 10}, {"key": "b", "weight": 90}], "control": "b",
             "eligible": {"statuses": ["authorizedWhenInUse"]}, "guard": {"maxDrop": 0.1, "minAnswered": 250}}
            """#,
        ] {
            let parsed = try definition(body)
            let stored = try JSONEncoder().encode(parsed)
            let readBack = try ExperimentDefinition(key: parsed.key, body: stored)
            #expect(readBack == parsed)
        }
        let simplest = try definition(Self.twoVariants)
        let storedForm = try JSONEncoder().encode(simplest)
        let node = try #require(JSONNode.parse(bytes: Array(storedForm)))
        #expect(node["description"]?.string == "")
        #expect(node["prompt"]?.string == "whenInUse")
        #expect(node["control"]?.string == "dialog")
        #expect(node["guard"]?.isNull == true)
        #expect(node["eligible"]?["platforms"]?.isNull == true)
        #expect(node["eligible"]?["statuses"]?.isNull == true)
        #expect(node["eligible"]?["minAppVersion"]?.isNull == true)
        #expect(node["key"] == nil)
    }

    @Test("Values out of range or outside the vocabulary are refused, naming the field", arguments: [
        (#"{"prompt": "whenInUse", "variants": [{"key": "dialog", "weight": 100}]}"#, "variants"),
        (#"{"prompt": "whenInUse", "variants": [{"key": "a", "weight": 50}, {"key": "b", "weight": 40}]}"#, "variants"),
        (#"{"prompt": "whenInUse", "variants": [{"key": "a", "weight": 50}, {"key": "b", "weight": 51}]}"#, "variants"),
        (#"{"prompt": "whenInUse", "variants": [{"key": "a", "weight": 101}, {"key": "b", "weight": -1}]}"#, "variants[0].weight"),
        (#"{"prompt": "whenInUse", "variants": [{"key": "a", "weight": 49.5}, {"key": "b", "weight": 50.5}]}"#, "variants[0].weight"),
        (#"{"prompt": "whenInUse", "variants": [{"key": "a", "weight": 50}, {"key": "a", "weight": 50}]}"#, "variants[1].key"),
        (#"{"prompt": "whenInUse", "variants": [{"key": "a b", "weight": 50}, {"key": "c", "weight": 50}]}"#, "variants[0].key"),
        (#"{"prompt": "whenInUse", "variants": [{"key": "", "weight": 50}, {"key": "c", "weight": 50}]}"#, "variants[0].key"),
        (#"{"prompt": "whenInUse", "variants": [{"key": "a", "weight": 50}, {"key": "b", "weight": 50}], "control": "c"}"#, "control"),
        (#"{"prompt": "dialog", "variants": [{"key": "a", "weight": 50}, {"key": "b", "weight": 50}]}"#, "prompt"),
        (#"{"prompt": [], "variants": [{"key": "a", "weight": 50}, {"key": "b", "weight": 50}]}"#, "prompt"),
        (#"{"prompt": ["whenInUse", "whenInUse"], "variants": [{"key": "a", "weight": 50}, {"key": "b", "weight": 50}]}"#, "prompt"),
        (#"{"prompt": ["whenInUse", "nope"], "variants": [{"key": "a", "weight": 50}, {"key": "b", "weight": 50}]}"#, "prompt[1]"),
        (#"{"prompt": "whenInUse", "variants": [{"key": "a", "weight": 50}, {"key": "b", "weight": 50}], "description": "a\u0007"}"#, "description"),
        (#"{"prompt": "whenInUse", "variants": [{"key": "a", "weight": 50}, {"key": "b", "weight": 50}], "eligible": {"platforms": ["symbian"]}}"#, "eligible.platforms"),
        (#"{"prompt": "whenInUse", "variants": [{"key": "a", "weight": 50}, {"key": "b", "weight": 50}], "eligible": {"platforms": []}}"#, "eligible.platforms"),
        (#"{"prompt": "whenInUse", "variants": [{"key": "a", "weight": 50}, {"key": "b", "weight": 50}], "eligible": {"statuses": ["granted"]}}"#, "eligible.statuses"),
        (#"{"prompt": "whenInUse", "variants": [{"key": "a", "weight": 50}, {"key": "b", "weight": 50}], "eligible": {"minAppVersion": "beta"}}"#, "eligible.minAppVersion"),
        (#"{"prompt": "whenInUse", "variants": [{"key": "a", "weight": 50}, {"key": "b", "weight": 50}], "eligible": {"minAppVersion": 5}}"#, "eligible.minAppVersion"),
        (#"{"prompt": "whenInUse", "variants": [{"key": "a", "weight": 50}, {"key": "b", "weight": 50}], "guard": {"maxDrop": 1.5}}"#, "guard.maxDrop"),
        (#"{"prompt": "whenInUse", "variants": [{"key": "a", "weight": 50}, {"key": "b", "weight": 50}], "guard": {"maxDrop": -0.1}}"#, "guard.maxDrop"),
        (#"{"prompt": "whenInUse", "variants": [{"key": "a", "weight": 50}, {"key": "b", "weight": 50}], "guard": {"maxDrop": 0.1, "minAnswered": 0}}"#, "guard.minAnswered"),
        (#"{"prompt": "whenInUse", "variants": [{"key": "a", "weight": 50}, {"key": "b", "weight": 50}], "guard": {"maxDrop": 0.1, "minAnswered": 2.5}}"#, "guard.minAnswered"),
    ])
    func refused(body: String, field: String) {
        let error = refusal(body)
        #expect(error?.kind == .invalidValue, "\(body)")
        #expect(error?.field == field, "\(body): \(error?.message ?? "")")
        #expect(error?.message.hasPrefix(field + ":") == true)
    }

    @Test("Eleven variants are too many; ten are allowed")
    func variantCount() throws {
        func body(_ weights: [Int]) -> String {
            let variants = weights.enumerated().map { #"{"key": "v\#($0.offset)", "weight": \#($0.element)}"# }
            return #"{"prompt": "whenInUse", "variants": [\#(variants.joined(separator: ","))]}"#
        }
        let ten = try definition(body(Array(repeating: 10, count: 10)))
        #expect(ten.variants.count == 10)
        #expect(refusal(body(Array(repeating: 10, count: 9) + [5, 5]))?.field == "variants")
    }

    @Test("The experiment's key is a feature key")
    func experimentKey() {
        #expect(refusal(Self.twoVariants, key: "has space")?.field == "key")
        #expect(refusal(Self.twoVariants, key: String(repeating: "k", count: 65))?.field == "key")
        let longest = try? definition(Self.twoVariants, key: String(repeating: "k", count: 64))
        #expect(longest != nil)
    }

    @Test("A missing or mistyped field is the decoder's (400), naming it")
    func malformed() {
        #expect(refusal(#"{"variants": [{"key": "a", "weight": 50}, {"key": "b", "weight": 50}]}"#)?.kind == .missingField)
        #expect(refusal(#"{"prompt": "whenInUse"}"#)?.field == "variants")
        #expect(refusal(#"{"prompt": 5, "variants": []}"#)?.kind == .wrongType)
        #expect(refusal(#"{"prompt": 5, "variants": []}"#)?.field == "prompt")
        #expect(refusal(#"{"prompt": "whenInUse", "variants": [{"key": "a", "weight": "50"}, {"key": "b", "weight": 50}]}"#)?.kind == .wrongType)
        let noMaxDrop = refusal(#"{"prompt": "whenInUse", "variants": [{"key": "a", "weight": 50}, {"key": "b", "weight": 50}], "guard": {}}"#)
        #expect(noMaxDrop?.kind == .missingField)
        #expect(noMaxDrop?.field == "guard.maxDrop")
        #expect(refusal("not json")?.kind == .malformedJSON)
    }

    @Test("Null where GET shows null: no guard, no condition")
    func nulls() throws {
        let parsed = try definition(#"""
            {"prompt": "whenInUse", "variants": [{"key": "a", "weight": 50}, {"key": "b", "weight": 50}],
             "eligible": {"platforms": null, "statuses": null, "minAppVersion": null}, "guard": null}
            """#)
        #expect(parsed.guard == nil)
        #expect(parsed.eligibility.admitsEveryone)
    }

    // MARK: What a running experiment's PUT may change

    @Test("Description, weights, eligible and guard may change while running")
    func allowedChanges() throws {
        let current = try simple()
        let replacement = try ExperimentDefinition(
            key: "onboarding-primer", description: "now 90/10", prompt: .anyOf([.whenInUse]),
            variants: [ExperimentVariant(key: "dialog", weight: 90), ExperimentVariant(key: "primer", weight: 10)],
            eligibility: ExperimentEligibility(platforms: [.iOS]), guard: ExperimentGuard(maxDrop: 0.02))
        #expect(current.fixedFieldChanged(by: replacement) == nil)
    }

    @Test("Variant keys or order, prompt, or control changed while running: 409 experimentRunning naming it")
    func fixedChanges() throws {
        let current = try simple()
        let reordered = try simple([("primer", 50), ("dialog", 50)], control: "dialog")
        let renamed = try simple([("dialog", 50), ("teaser", 50)])
        let added = try simple([("dialog", 50), ("primer", 25), ("button", 25)])
        let primerControl = try simple(control: "primer")
        #expect(current.fixedFieldChanged(by: reordered) == .variants)
        #expect(current.fixedFieldChanged(by: renamed) == .variants)
        #expect(current.fixedFieldChanged(by: added) == .variants)
        #expect(current.fixedFieldChanged(by: primerControl) == .control)
        let otherPrompt = try ExperimentDefinition(
            key: "onboarding-primer", prompt: .anyOf([.whenInUse, .locationButton]), variants: current.variants)
        #expect(current.fixedFieldChanged(by: otherPrompt) == .prompt)

        // A body without control means the first variant: not the current control "primer".
        #expect(primerControl.fixedFieldChanged(by: current) == .control)

        var experiment = Experiment(definition: current, createdAt: Date(timeIntervalSince1970: 0))
        do {
            try experiment.replace(with: primerControl)
            Issue.record("a changed control was taken")
        } catch {
            #expect(error == .running(.control))
            #expect(error.code == "experimentRunning")
        }
        #expect(experiment.definition == current)
        try experiment.replace(with: try simple([("dialog", 70), ("primer", 30)]))
        #expect(experiment.definition.variants.map(\.weight) == [70, 30])
    }

    // MARK: Stops

    @Test("A stop takes the control by default; a stopped experiment takes no change and no second stop")
    func stops() throws {
        let start = Date(timeIntervalSince1970: 1_700_000_000)
        var experiment = Experiment(definition: try simple(), createdAt: start)
        do {
            try experiment.stop(winner: "teaser", reason: .operator, at: start)
            Issue.record("a winner that is no variant was taken")
        } catch {
            #expect(error.code == "validationFailed")
            if case .invalid(let invalid) = error { #expect(invalid.field == "winner") } else { Issue.record("\(error)") }
        }
        #expect(experiment.state == .running)
        try experiment.stop(reason: .guard, at: start.addingTimeInterval(60))
        #expect(experiment.state == .stopped)
        #expect(experiment.winner == "dialog")
        #expect(experiment.stopReason == .guard)
        #expect(experiment.stoppedAt == start.addingTimeInterval(60))
        do {
            try experiment.stop(winner: "primer", reason: .operator, at: start)
            Issue.record("a stopped experiment was stopped again")
        } catch {
            #expect(error == .stopped)
            #expect(error.code == "experimentStopped")
        }
        let reweighted = try simple([("dialog", 10), ("primer", 90)])
        do {
            try experiment.replace(with: reweighted)
            Issue.record("a stopped experiment was changed")
        } catch {
            #expect(error == .stopped)
        }
        #expect(experiment.winner == "dialog")
    }

    @Test("The API form: key, definition, state and the stop's fields")
    func apiForm() throws {
        var experiment = Experiment(definition: try simple(), createdAt: Date(timeIntervalSince1970: 0))
        let runningJSON = try JSONEncoder().encode(experiment)
        let running = try #require(JSONNode.parse(bytes: Array(runningJSON)))
        #expect(running["key"]?.string == "onboarding-primer")
        #expect(running["state"]?.string == "running")
        #expect(running["createdAt"]?.string?.hasPrefix("1970-01-01T00:00:00") == true)
        #expect(running["stoppedAt"]?.isNull == true)
        #expect(running["stopReason"]?.isNull == true)
        #expect(running["winner"]?.isNull == true)
        #expect(running["variants"]?.array?.count == 2)
        try experiment.stop(winner: "primer", reason: .operator, at: Date(timeIntervalSince1970: 60))
        let stoppedJSON = try JSONEncoder().encode(experiment)
        let stopped = try #require(JSONNode.parse(bytes: Array(stoppedJSON)))
        #expect(stopped["state"]?.string == "stopped")
        #expect(stopped["stopReason"]?.string == "operator")
        #expect(stopped["winner"]?.string == "primer")
    }

    // MARK: Eligibility

    func device(_ platform: Platform?, appVersion: String? = nil, authorization: Authorization = .notDetermined) -> DeviceState {
        var state = DeviceState()
        state.context = DeviceContext(platform: platform, appVersion: appVersion)
        state.authorization = authorization
        return state
    }

    @Test("Platforms as contextReported names them; no context matches no platform")
    func platforms() throws {
        let apple = try ExperimentEligibility(platforms: [.iOS, .iPadOS])
        #expect(apple.admits(device(.iOS)))
        #expect(!apple.admits(device(.android)))
        #expect(!apple.admits(DeviceState()))
        let android = try ExperimentEligibility(platforms: [.android])
        #expect(android.admits(device(.android)))
        #expect(ExperimentEligibility().admits(DeviceState()))
    }

    @Test("Statuses as SPEC §2 derives them")
    func statuses() throws {
        let undecided = try ExperimentEligibility(statuses: [.notDetermined])
        #expect(undecided.admits(device(.iOS)))
        #expect(!undecided.admits(device(.iOS, authorization: .authorizedWhenInUse)))
        var restricted = device(.iOS)
        restricted.restricted = true
        #expect(!undecided.admits(restricted))
        let onlyRestricted = try ExperimentEligibility(statuses: [.restricted])
        #expect(onlyRestricted.admits(restricted))
    }

    @Test("minAppVersion as a feature's floor compares it; no appVersion is below it")
    func minAppVersion() throws {
        let floor = try ExperimentEligibility(minAppVersion: try #require(AppVersion("5.2")))
        #expect(floor.admits(device(.iOS, appVersion: "5.2.1-beta")))
        #expect(floor.admits(device(.iOS, appVersion: "5.2")))
        #expect(!floor.admits(device(.iOS, appVersion: "5.1.9")))
        #expect(!floor.admits(device(.iOS)))
        let all = try ExperimentEligibility(platforms: [.iOS], statuses: [.notDetermined], minAppVersion: AppVersion("5"))
        #expect(all.admits(device(.iOS, appVersion: "6.0")))
        #expect(!all.admits(device(.iOS, appVersion: "6.0", authorization: .denied)))
    }

    // MARK: Evaluation

    @Test("Evaluation: assigned and exposed once, sticky, not eligible, stopped")
    func evaluation() throws {
        let definition = try ExperimentDefinition(
            key: "onboarding-primer", prompt: .one(.whenInUse),
            variants: [ExperimentVariant(key: "dialog", weight: 50), ExperimentVariant(key: "primer", weight: 50)],
            eligibility: ExperimentEligibility(statuses: [.notDetermined]))
        var experiment = Experiment(definition: definition, createdAt: Date(timeIntervalSince1970: 0))
        let buckets = ExperimentBuckets(appIDText: ExperimentAssignmentTests.appID, key: definition.key, variants: definition.variants)
        let unit = ExperimentUnit.install("5E3C1F0A-ABCD")  // bucket 1930: dialog
        let later = ExperimentUnit.device(userID: "user-42", deviceID: "phone-1")  // bucket 1036: dialog

        let first = experiment.evaluate(state: device(.iOS), exposure: nil, unit: unit, buckets: buckets)
        #expect(first == ExperimentEvaluation(variant: "dialog", reason: .assigned, exposedAt: nil, exposes: unit))

        // Exposed to primer (under weights since changed): sticky, even though no longer eligible.
        let exposure = ExperimentExposure(unit: later, variant: "primer", exposedAt: Date(timeIntervalSince1970: 5))
        let sticky = experiment.evaluate(
            state: device(.iOS, authorization: .authorizedWhenInUse), exposure: exposure, unit: unit, buckets: buckets)
        #expect(sticky == ExperimentEvaluation(variant: "primer", reason: .assigned, exposedAt: Date(timeIntervalSince1970: 5), exposes: nil))

        let notEligible = experiment.evaluate(state: device(.iOS, authorization: .denied), exposure: nil, unit: unit, buckets: buckets)
        #expect(notEligible == ExperimentEvaluation(variant: "dialog", reason: .notEligible, exposedAt: nil, exposes: nil))
        #expect(notEligible.reason.ofrepReason == "DEFAULT")
        #expect(experiment.variantWithoutDevice.variant == "dialog")
        #expect(experiment.variantWithoutDevice.ofrepReason == "DEFAULT")

        try experiment.stop(winner: "primer", reason: .operator, at: Date(timeIntervalSince1970: 10))
        let stopped = experiment.evaluate(state: device(.iOS), exposure: nil, unit: unit, buckets: buckets)
        #expect(stopped == ExperimentEvaluation(variant: "primer", reason: .stopped, exposedAt: nil, exposes: nil))
        let stoppedExposed = experiment.evaluate(state: device(.iOS), exposure: exposure, unit: unit, buckets: buckets)
        #expect(stoppedExposed.exposedAt == Date(timeIntervalSince1970: 5))
        #expect(stoppedExposed.reason.ofrepReason == "STATIC")
        #expect(experiment.variantWithoutDevice.variant == "primer")
        #expect(experiment.variantWithoutDevice.ofrepReason == "STATIC")
    }

    // MARK: Grants

    @Test("A grant gives what the prompt asked: Always for an Always prompt")
    func grants() {
        var whenInUse = DeviceState()
        whenInUse.authorization = .authorizedWhenInUse
        var always = DeviceState()
        always.authorization = .authorizedAlways
        #expect(Prompt.whenInUse.grantsWhatItAsked(.allowWhileUsing, after: whenInUse))
        #expect(!Prompt.whenInUse.grantsWhatItAsked(.dontAllow, after: DeviceState()))
        #expect(!Prompt.alwaysUpgrade.grantsWhatItAsked(.keepOnlyWhileUsing, after: whenInUse))
        #expect(Prompt.alwaysUpgrade.grantsWhatItAsked(.changeToAlwaysAllow, after: always))
        #expect(Prompt.alwaysFirst.grantsWhatItAsked(.allowWhileUsing, after: always))
        #expect(!Prompt.foreground.grantsWhatItAsked(.dismissed, after: DeviceState()))
        #expect(Prompt.backgroundDialog.grantsWhatItAsked(.allowAllTheTime, after: always))
        #expect(!Prompt.backgroundDialog.grantsWhatItAsked(.keepWhileUsing, after: whenInUse))
        #expect(Prompt.locationButton.grantsWhatItAsked(.allow, after: whenInUse))
        #expect(Prompt.fullAccuracy.grantsWhatItAsked(.allowFullAccuracy, after: whenInUse))
        #expect(!Prompt.fullAccuracy.grantsWhatItAsked(.keepReducedAccuracy, after: whenInUse))
        #expect(Prompt.allCases.filter(\.asksForAlways) == [.alwaysFirst, .alwaysUpgrade, .alwaysSecond, .legacyAlways, .backgroundDialog, .backgroundSettings])
    }
}
