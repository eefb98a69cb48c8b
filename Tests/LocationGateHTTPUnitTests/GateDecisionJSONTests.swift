import Foundation
import LocationAuthorization
import LocationGateJSON
import Testing

@testable import LocationGateHTTP
@testable import LocationGateService

@Suite("The hand-written gate JSON equals the Codable form", .timeLimit(.minutes(1)))
struct GateDecisionJSONTests {
    @Test("Every reason and action, with and without missing keys, with characters to escape")
    func sameJSON() throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        for (index, reason) in GateReason.allCases.enumerated() {
            let action = GateAction.allCases[index % GateAction.allCases.count]
            let decision = GateDecision(
                feature: index % 2 == 0 ? "arrival-lights" : "odd \"key\" \\ \u{1}", enabled: index % 3 == 0, reason: reason,
                action: action, status: AuthorizationStatus.allCases[index % 5], provisional: index % 2 == 1,
                temporary: index % 4 == 1, accuracy: index % 2 == 0 ? .full : .reduced, requiredTier: index % 2 == 0 ? .always : .whenInUse,
                version: Int64(index * 1000), missingKeys: index % 3 == 1 ? ["NSLocationWhenInUseUsageDescription", "x"] : nil)
            let encoded = try encoder.encode(decision)
            let expected = try #require(JSONNode.parse(bytes: Array(encoded)))
            let actual = try #require(JSONNode.parse(bytes: decision.json))
            #expect(actual.hasUniqueKeys && actual.inKeyOrder == expected.inKeyOrder, "\(String(decoding: Data(decision.json), as: UTF8.self))")
            #expect(try JSONDecoder().decode(GateDecision.self, from: Data(decision.json)) == decision)
        }
    }
}

@Suite("The hand-written ingest results JSON equals the Codable form", .timeLimit(.minutes(1)))
struct EventResultsJSONTests {
    /// Samples of one kind of effect. The switch has no `default`: a new kind is a compile error
    /// here until it has samples (the domain's own samples, `WireSamples`, are in another test
    /// target).
    static func effects(_ kind: Effect.Kind) -> [Effect] {
        switch kind {
        case .promptShown: return [.promptShown(.whenInUse), .promptShown(.locationButton)]
        case .statusChanged: return [.statusChanged(from: .notDetermined, to: .authorizedWhenInUse)]
        case .accuracyChanged: return [.accuracyChanged(from: .full, to: .reduced)]
        case .noEffect: return [.noEffect(.promptPending), .noEffect(.onlyForLocationButton)]
        case .failed:
            return [
                .failed(.missingUsageDescription, keys: ["NSLocationWhenInUseUsageDescription", "x\"y \\ /é😀\n"]),
                .failed(.locationButtonError, keys: []),
            ]
        case .eventDelivered: return [.eventDelivered(true), .eventDelivered(false)]
        case .reconciled: return [.reconciled(from: .denied, to: .authorizedAlways)]
        case .answerInferred: return [.answerInferred(prompt: .foreground, choice: .approximateWhileUsing)]
        case .answerCorrected: return [.answerCorrected(prompt: .whenInUse, from: .allowWhileUsing, to: .allowOnce)]
        case .sessionChanged: return [.sessionChanged(session: "nav.main", active: true), .sessionChanged(session: "locationButton", active: false)]
        case .reset: return [.reset(.reinstalled)]
        }
    }

    static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }()

    /// Results carrying from none to all of the sample effects, duplicates and characters to
    /// escape.
    static let results: [EventResult] = {
        let effects = Effect.Kind.allCases.flatMap(EventResultsJSONTests.effects)
        return (0..<effects.count + 1).map { index in
            EventResult(
                id: UUID().uuidString.lowercased(), userId: index % 2 == 0 ? "user-\(index)" : "odd \"user\" \\ \u{1}\n",
                deviceId: "device/\(index)", version: Int64(index * 1000), effects: Array(effects.prefix(index)),
                status: AuthorizationStatus.allCases[index % 5], duplicate: index % 3 == 0)
        }
    }()

    /// The Codable form of `value` and what `EventResults.json` wrote, parsed.
    static func forms(_ value: EventResults) throws -> (codable: JSONNode, written: JSONNode) {
        let encoded = try Self.encoder.encode(value)
        let codable = try #require(JSONNode.parse(bytes: Array(encoded)))
        let written = try #require(JSONNode.parse(bytes: value.json), "\(String(decoding: value.json, as: UTF8.self))")
        return (codable, written)
    }

    @Test("Results with every kind of effect, duplicates and characters to escape")
    func sameJSON() throws {
        for kind in Effect.Kind.allCases {
            let samples = Self.effects(kind)
            #expect(!samples.isEmpty && samples.allSatisfy { $0.kind == kind }, "\(kind): \(samples)")
        }
        for count in [0, 1, 2, Self.results.count] {
            let value = EventResults(results: Array(Self.results.prefix(count)))
            let (codable, written) = try Self.forms(value)
            #expect(written.inKeyOrder == codable.inKeyOrder, "\(String(decoding: value.json, as: UTF8.self))")
        }
        // The last result carries every sample: each kind was compared.
        let all = Set((Self.results.last?.effects ?? []).map(\.kind))
        #expect(all == Set(Effect.Kind.allCases))
    }

    @Test("An ingest key's results (withState false): the Codable form without each result's effects and status")
    func withoutState() throws {
        for count in [0, 1, 2, Self.results.count] {
            let value = EventResults(results: Array(Self.results.prefix(count)), withState: false)
            let (codable, written) = try Self.forms(value)
            // The one difference, on purpose: an ingest key is in every copy of the app, so its
            // answer says what was stored, not the device's state (`EventRoutes.append`).
            #expect(written.inKeyOrder == codable.withoutState.inKeyOrder, "\(String(decoding: value.json, as: UTF8.self))")
            for result in written["results"]?.array ?? [] {
                #expect(result["effects"] == nil && result["status"] == nil && result["version"] != nil, "\(result)")
            }
            #expect(written["results"]?.array?.count == count)
        }
    }
}

extension JSONNode {
    /// The `EventResults` form without each result's `effects` and `status`.
    fileprivate var withoutState: JSONNode {
        guard case .object(let members) = self, case .array(let results)? = self["results"] else { return self }
        let stripped = results.map { result -> JSONNode in
            guard case .object(let fields) = result else { return result }
            return .object(fields.filter { $0.key != "effects" && $0.key != "status" })
        }
        return .object(members.map { $0.key == "results" ? Member(key: "results", value: .array(stripped)) : $0 })
    }
}
