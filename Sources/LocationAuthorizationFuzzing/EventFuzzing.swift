import Foundation
import LocationAuthorization

/// What the fuzzer runs on every input: bytes taken as the body of `POST /v1/events`, through
/// the client decoder and its validation, the reducer, the gates of every kind of feature, and
/// the stored JSON forms. Any input may be refused; none may trap. The preconditions are the
/// invariants a crash reports:
/// - every string that validation let through obeys SPEC §1 (no controls, bounded bytes);
/// - an event's stored form reads back as the same event, and a state's as the same state;
/// - an event the reducer refuses leaves the state as it was (what `state?asOf=` relies on).
///
/// `Labs/fuzz` builds it with libFuzzer; the inputs that crashed it are kept in
/// `Tests/LocationAuthorizationTests/FuzzCorpus/` and replayed by the tests.
public enum EventFuzzing {
    private struct Batch: Decodable {
        var events: [EventSubmission]
    }

    /// A feature of each shape the gating table distinguishes.
    static let features: [Feature] = [
        Feature(key: "w", requires: .whenInUse, services: [.standard], accuracy: .any, description: nil),
        Feature(key: "a", requires: .always, services: [.regionMonitoring, .visits], accuracy: .any, description: nil),
        Feature(key: "f", requires: .whenInUse, services: [.heading], accuracy: .full, description: nil),
        Feature(key: "p", requires: .always, services: [.locationPush, .significantChange], accuracy: .full, description: nil),
    ]

    /// Runs one input; returns how many of its events reached the reducer.
    @discardableResult
    public static func run(_ bytes: [UInt8]) -> Int {
        guard let batch = try? EventCoding.decode(Batch.self, from: Data(bytes)) else { return 0 }
        var state = DeviceState()
        for submission in batch.events.prefix(1000) {
            checkStrings(submission)
            let event = submission.event
            let data = event.dataJSON
            let stored = LocationEvent(storedType: event.type.rawValue, data: data)
            precondition(stored == event, "the stored form \(data) reads back as \(String(describing: stored))")
            let before = state
            do {
                _ = try state.apply(event)
            } catch {
                precondition(state == before, "a refused event changed the state: \(error)")
            }
            let text = state.storedJSON
            precondition(DeviceState(storedJSON: text) == state, "the stored state \(text) does not read back")
            for feature in features {
                let decision = state.decide(feature, version: 1)
                precondition(decision.enabled == (decision.reason == .authorized), "enabled without authorized: \(decision)")
            }
        }
        return min(batch.events.count, 1000)
    }

    static func checkStrings(_ submission: EventSubmission) {
        precondition(EventSubmission.isValidIdentifier(submission.userId) && EventSubmission.isValidIdentifier(submission.deviceId))
        switch submission.event {
        case .contextReported(let context):
            if let appVersion = context.appVersion {
                precondition((try? ClientText.check(appVersion, field: "appVersion", bytes: 1...64)) != nil, "appVersion \(appVersion.debugDescription)")
            }
            for key in (context.usageDescriptions ?? []).union(context.temporaryUsagePurposeKeys ?? []) {
                precondition((try? ClientText.checkKey(key, field: "key")) != nil, "key \(key.debugDescription)")
            }
        case .authorizationRequested(let request):
            if let key = request.purposeKey {
                precondition((try? ClientText.checkKey(key, field: "purposeKey")) != nil, "purposeKey \(key.debugDescription)")
            }
        case .locationButtonSession(let state, let cause):
            if let cause {
                precondition(state == .failed, "a cause with \(state)")
                precondition((try? ClientText.checkClassName(cause, field: "cause", bytes: LocationButton.causeBytes)) != nil, "cause \(cause.debugDescription)")
            }
        default:
            break
        }
    }
}
