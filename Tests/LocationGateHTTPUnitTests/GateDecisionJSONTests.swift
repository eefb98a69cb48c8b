import Foundation
import LocationAuthorization
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
            let expected = try JSONSerialization.jsonObject(with: encoder.encode(decision)) as? NSDictionary
            let actual = try JSONSerialization.jsonObject(with: Data(decision.json)) as? NSDictionary
            #expect(actual == expected, "\(String(decoding: Data(decision.json), as: UTF8.self))")
            #expect(try JSONDecoder().decode(GateDecision.self, from: Data(decision.json)) == decision)
        }
    }
}

@Suite("The hand-written ingest results JSON equals the Codable form", .timeLimit(.minutes(1)))
struct EventResultsJSONTests {
    @Test("Results with every kind of effect, duplicates and characters to escape")
    func sameJSON() throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let effects: [Effect] = [
            .promptShown(.whenInUse), .statusChanged(from: .notDetermined, to: .authorizedWhenInUse),
            .accuracyChanged(from: .full, to: .reduced), .noEffect(.promptPending),
            .failed(.missingUsageDescription, keys: ["NSLocationWhenInUseUsageDescription", "x\"y"]),
            .eventDelivered(true), .reconciled(from: .denied, to: .authorizedAlways),
        ]
        let results = (0..<effects.count + 1).map { index in
            EventResult(
                id: UUID().uuidString.lowercased(), userId: index % 2 == 0 ? "user-\(index)" : "odd \"user\" \\ \u{1}\n",
                deviceId: "device/\(index)", version: Int64(index * 1000), effects: Array(effects.prefix(index)),
                status: AuthorizationStatus.allCases[index % 5], duplicate: index % 3 == 0)
        }
        for count in [0, 1, results.count] {
            let value = EventResults(results: Array(results.prefix(count)))
            let expected = try JSONSerialization.jsonObject(with: encoder.encode(value)) as? NSDictionary
            let actual = try JSONSerialization.jsonObject(with: Data(value.json)) as? NSDictionary
            #expect(actual != nil && actual == expected, "\(String(decoding: Data(value.json), as: UTF8.self))")
        }
    }
}
