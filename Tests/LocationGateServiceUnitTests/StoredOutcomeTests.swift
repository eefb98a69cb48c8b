import EventLog
import Foundation
import LocationAuthorization
import LocationGateSimulation
import Testing

@testable import LocationGateService

@Suite("Stored outcomes: the hand-written form is the Codable form", .timeLimit(.minutes(1)))
struct StoredOutcomeTests {
    @Test("Outcomes of a simulated population: written as Codable writes them, read back equal")
    func outcomes() throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let simulator = PopulationSimulator(seed: 11)
        var checked = 0
        for index in 0..<400 {
            var device = DeviceStateStore.Row(
                key: StreamKey(appID: UUID(), userID: "u", deviceID: "d\(index)"), version: 0, state: DeviceState(), milestones: [])
            for submission in simulator.device(index) {
                guard let outcome = try? DeviceProjector.apply(submission.event, to: &device) else { continue }
                let written = outcome.storedJSON
                let expected = try JSONSerialization.jsonObject(with: encoder.encode(outcome)) as? NSDictionary
                #expect(try JSONSerialization.jsonObject(with: Data(written.utf8)) as? NSDictionary == expected, "\(written)")
                #expect(try JSONText.outcome(written) == outcome)
                #expect(try JSONDecoder().decode(EventOutcome.self, from: Data(written.utf8)) == outcome)
                #expect(try JSONText.outcome(String(decoding: encoder.encode(outcome), as: UTF8.self)) == outcome)
                checked += 1
            }
        }
        #expect(checked > 1000)
    }

    @Test("An outcome carries analytics only when its event counts for something: never a prompt shown or answered without them")
    func analyticsOnlyWhenCounted() {
        let simulator = PopulationSimulator(seed: 5)
        var (counted, uncounted) = (0, 0)
        for index in 0..<400 {
            var device = DeviceStateStore.Row(
                key: StreamKey(appID: UUID(), userID: "u", deviceID: "d\(index)"), version: 0, state: DeviceState(), milestones: [])
            for submission in simulator.device(index) {
                let pending = device.state.pendingPrompt
                guard let outcome = try? DeviceProjector.apply(submission.event, to: &device) else { continue }
                if let analytics = outcome.analytics {
                    var choice: PromptChoice?
                    if case .promptResponded(let explicit) = submission.event { choice = explicit }
                    #expect(!analytics.counters(effects: outcome.effects, choice: choice, type: submission.event.type).isEmpty)
                    counted += 1
                } else {
                    let showsPrompt = outcome.effects.contains { if case .promptShown = $0 { true } else { false } }
                    var answers = false
                    if case .promptResponded = submission.event, pending != nil { answers = true }
                    #expect(!showsPrompt && !answers, "\(submission.event) -> \(outcome.effects)")
                    #expect(!outcome.storedJSON.contains("analytics"))
                    uncounted += 1
                }
            }
        }
        #expect(counted > 100 && uncounted > 100, "\(counted) counted, \(uncounted) not")
    }

    @Test("Text that is not an outcome is an error, not a default")
    func malformed() {
        #expect(throws: (any Error).self) { try JSONText.outcome(#"{"effects": [{"kind": "nonsense"}]}"#) }
        #expect(throws: (any Error).self) { try JSONText.state("[]") }
    }
}
