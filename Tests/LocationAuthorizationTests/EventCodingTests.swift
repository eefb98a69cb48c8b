import Foundation
import Testing

@testable import LocationAuthorization

@Suite("Event JSON (SPEC §1, §5)", .timeLimit(.minutes(1)))
struct EventCodingTests {
    @Test("A submission decodes with the SPEC's names and round-trips")
    func submission() throws {
        let json = #"""
            {"id": "6f1c1f5e-5c1a-4d8e-9f00-0c2b8f9f0a11", "userId": "u-42", "deviceId": "d-7",
             "occurredAt": "2026-11-22T10:00:00Z", "type": "authorizationRequested",
             "data": {"request": "always"}, "expectedVersion": 3}
            """#
        let submission = try EventCoding.decode(EventSubmission.self, from: Data(json.utf8))
        #expect(submission.userId == "u-42" && submission.deviceId == "d-7" && submission.expectedVersion == 3)
        #expect(submission.event == .authorizationRequested(.always))
        #expect(submission.occurredAt == Date(timeIntervalSince1970: 1_795_341_600))
        let again = try EventCoding.decode(EventSubmission.self, from: JSONEncoder().encode(submission))
        #expect(again == submission)
    }

    @Test("Every event type round-trips through JSON")
    func roundTrip() throws {
        for event in WireSamples.allEvents {
            let data = try JSONEncoder().encode(event)
            #expect(try EventCoding.decode(LocationEvent.self, from: data) == event)
        }
        #expect(Set(WireSamples.allEvents.map(\.type)) == Set(EventType.allCases))
    }

    @Test("Every type's traits hold: its data members are the ones it declares; its families accept it, the other refuses it naming type")
    func traits() throws {
        var written: [EventType: Set<String>] = [:]
        for event in WireSamples.allEvents {
            let traits = event.type.traits
            let object = try JSONSerialization.jsonObject(with: JSONEncoder().encode(event)) as? [String: Any]
            let members = Set((object?["data"] as? [String: Any] ?? [:]).keys)
            #expect(members.isSubset(of: Set(traits.dataFields)), "\(event.type): \(members.subtracting(traits.dataFields))")
            written[event.type, default: []].formUnion(members)
            for family in PlatformFamily.allCases {
                var state = DeviceState()
                let context: DeviceContext = family == .android
                    ? DeviceContext(platform: .android, apiLevel: 34, targetSdk: 34) : DeviceContext(platform: .iOS, osVersion: OSVersion(18, 0))
                _ = try state.apply(.contextReported(context))
                do {
                    _ = try state.apply(event)
                    #expect(traits.families.contains(family), "\(family) accepted \(event.type)")
                } catch {
                    let refusedAsType = error.code == .notOnThisPlatform && error.field == "type"
                    #expect(refusedAsType == !traits.families.contains(family), "\(family), \(event.type): \(error)")
                }
            }
        }
        #expect(EventType.allCases.allSatisfy { !$0.traits.families.isEmpty })
        // The samples write every member each type declares somewhere (its optional ones too).
        for type in EventType.allCases {
            let missing = Set(type.traits.dataFields).subtracting(written[type] ?? [])
            #expect(missing.isEmpty, "no sample of \(type) writes \(missing.sorted())")
        }
    }

    @Test("Effects encode with kind and the SPEC's field names")
    func effects() throws {
        let effect = Effect.failed(.missingUsageDescription, keys: ["NSLocationWhenInUseUsageDescription"])
        let object = try JSONSerialization.jsonObject(with: JSONEncoder().encode(effect)) as? [String: Any]
        #expect(object?["kind"] as? String == "failed")
        #expect(object?["reason"] as? String == "missingUsageDescription")
        #expect(object?["keys"] as? [String] == ["NSLocationWhenInUseUsageDescription"])
        let delivered = try JSONSerialization.jsonObject(with: JSONEncoder().encode(Effect.eventDelivered(true))) as? [String: Any]
        #expect(delivered?["delivered"] as? Bool == true)
        let listed: [Effect] = [.promptShown(.alwaysSecond), .statusChanged(from: .denied, to: .authorizedAlways),
                                .accuracyChanged(from: .full, to: .reduced), .noEffect(.confirmed), .eventDelivered(false),
                                .reconciled(from: .notDetermined, to: .restricted), .sessionChanged(session: "nav", active: false),
                                .noEffect(.deliveryOnly), .failed(.missingBackgroundMode, keys: ["UIBackgroundModes"]), .reset(.reinstalled), effect]
        for effect in listed + WireSamples.allEffects {
            #expect(try JSONDecoder().decode(Effect.self, from: JSONEncoder().encode(effect)) == effect)
        }
        // Every kind is written as its name, the one spelling both JSON forms read.
        for kind in Effect.Kind.allCases {
            for effect in WireSamples.effects(kind) {
                let object = try JSONSerialization.jsonObject(with: JSONEncoder().encode(effect)) as? [String: Any]
                #expect(effect.kind == kind && object?["kind"] as? String == kind.rawValue, "\(effect)")
            }
        }
    }

    @Test("Bad input is a typed error naming the field", arguments: [
        (#"{"type":"teleported","data":{}}"#, EventValidationError.Kind.unknownType, "type"),
        (#"{"type":"authorizationRequested","data":{"request":"sometimes"}}"#, .invalidValue, "data.request"),
        (#"{"type":"authorizationRequested","data":{}}"#, .missingField, "data.request"),
        (#"{"type":"authorizationRequested","data":{"request":"temporaryFullAccuracy"}}"#, .missingField, "data.purposeKey"),
        (#"{"type":"promptResponded","data":{"choice":7}}"#, .wrongType, "data.choice"),
        (#"{"type":"promptResponded"}"#, .missingField, "data"),
        (#"{"type":"contextReported","data":{"platform":"blackberry"}}"#, .invalidValue, "data.platform"),
        // SPEC §12: Android's fields bounded, known, not twice, and only on Android.
        (#"{"type":"contextReported","data":{"platform":"android","apiLevel":100,"targetSdk":34}}"#, .invalidValue, "data.apiLevel"),
        (#"{"type":"contextReported","data":{"platform":"android","apiLevel":34,"targetSdk":0}}"#, .invalidValue, "data.targetSdk"),
        (#"{"type":"contextReported","data":{"platform":"android","declaredPermissions":["camera"]}}"#, .invalidValue, "data.declaredPermissions"),
        (#"{"type":"contextReported","data":{"platform":"iOS","apiLevel":34}}"#, .invalidValue, "data.apiLevel"),
        (#"{"type":"permissionsRequested","data":{"permissions":[]}}"#, .invalidValue, "data.permissions"),
        (#"{"type":"permissionsRequested","data":{"permissions":["fine","fine"]}}"#, .invalidValue, "data.permissions"),
        (#"{"type":"permissionsRequested","data":{"permissions":["foregroundServiceLocation"]}}"#, .invalidValue, "data.permissions"),
        (#"{"type":"permissionsResult","data":{"granted":["fine"],"denied":["fine"],"interrupted":false}}"#, .invalidValue, "data.denied"),
        (#"{"type":"permissionsResult","data":{"granted":[],"denied":[]}}"#, .missingField, "data.interrupted"),
        (#"{"type":"permissionsObserved","data":{"granted":["gps"]}}"#, .invalidValue, "data.granted"),
        (#"{"type":"permissionsReset","data":{"reason":"userAsked"}}"#, .invalidValue, "data.reason"),
        (#"{"type":"contextReported","data":{"osVersion":"seventeen"}}"#, .invalidValue, "data.osVersion"),
        (#"{"type":"locationServicesChanged","data":{"enabled":"yes"}}"#, .wrongType, "data.enabled"),
        (#"{"data":{}}"#, .missingField, "type"),
        (#"not json"#, .malformedJSON, "body"),
        // SPEC §11: a flag the source cannot have, an unknown flag, a session key outside §1's
        // rules, a serviceSession diagnostic without its session, a start without a requirement.
        (#"{"type":"diagnosticObserved","data":{"source":"liveUpdates","flags":["alwaysAuthorizationDenied"]}}"#, .invalidValue, "data.flags"),
        (#"{"type":"diagnosticObserved","data":{"source":"monitor","flags":["teleported"]}}"#, .invalidValue, "data.flags"),
        (#"{"type":"diagnosticObserved","data":{"source":"monitor","flags":["stationary"]}}"#, .invalidValue, "data.flags"),
        (#"{"type":"diagnosticObserved","data":{"source":"liveUpdates","flags":["stationary","stationary"]}}"#, .invalidValue, "data.flags"),
        (#"{"type":"diagnosticObserved","data":{"source":"serviceSession","flags":[]}}"#, .invalidValue, "data.session"),
        (#"{"type":"diagnosticObserved","data":{"source":"monitor","session":"nav","flags":[]}}"#, .invalidValue, "data.session"),
        (#"{"type":"diagnosticObserved","data":{"source":"monitor"}}"#, .missingField, "data.flags"),
        (#"{"type":"diagnosticObserved","data":{"source":"radio","flags":[]}}"#, .invalidValue, "data.source"),
        (#"{"type":"serviceSessionChanged","data":{"session":"nav main","action":"started","requirement":"always"}}"#, .invalidValue, "data.session"),
        (#"{"type":"serviceSessionChanged","data":{"session":"","action":"started","requirement":"always"}}"#, .invalidValue, "data.session"),
        (#"{"type":"serviceSessionChanged","data":{"session":"nav","action":"started"}}"#, .invalidValue, "data.requirement"),
        (#"{"type":"serviceSessionChanged","data":{"session":"nav","action":"started","requirement":"sometimes"}}"#, .invalidValue, "data.requirement"),
        (#"{"type":"serviceSessionChanged","data":{"session":"nav","action":"invalidated","requirement":"always"}}"#, .invalidValue, "data.requirement"),
        (#"{"type":"serviceSessionChanged","data":{"session":"nav","action":"paused"}}"#, .invalidValue, "data.action"),
        (#"{"type":"backgroundActivityChanged","data":{"active":"yes"}}"#, .wrongType, "data.active"),
        // SPEC §12, the location button: a cause only with failed, a class name's characters, within 128 bytes.
        (#"{"type":"locationButtonSession","data":{"state":"opened","cause":"SecurityException"}}"#, .invalidValue, "data.cause"),
        (#"{"type":"locationButtonSession","data":{"state":"closed","cause":"SecurityException"}}"#, .invalidValue, "data.cause"),
        (#"{"type":"locationButtonSession","data":{"state":"failed","cause":"Service died, Session closed."}}"#, .invalidValue, "data.cause"),
        (#"{"type":"locationButtonSession","data":{"state":"failed","cause":""}}"#, .invalidValue, "data.cause"),
        ("{\"type\":\"locationButtonSession\",\"data\":{\"state\":\"failed\",\"cause\":\"\(String(repeating: "E", count: 129))\"}}", .invalidValue, "data.cause"),
        (#"{"type":"locationButtonSession","data":{"state":"paused"}}"#, .invalidValue, "data.state"),
        (#"{"type":"locationButtonSession","data":{}}"#, .missingField, "data.state"),
        (#"{"type":"locationButtonResult","data":{}}"#, .missingField, "data.granted"),
        (#"{"type":"locationButtonResult","data":{"granted":"yes"}}"#, .wrongType, "data.granted"),
        (#"{"type":"permissionsRequested","data":{"permissions":["locationButton"]}}"#, .invalidValue, "data.permissions"),
        (#"{"type":"contextReported","data":{"platform":"iOS","fineOnlyForLocationButton":true}}"#, .invalidValue, "data.fineOnlyForLocationButton"),
    ])
    func badInput(json: String, kind: EventValidationError.Kind, field: String) {
        do {
            _ = try EventCoding.decodeEvent(json)
            Issue.record("expected an error for \(json)")
        } catch {
            #expect(error.kind == kind)
            #expect(error.field == field)
        }
    }

    @Test("Envelope checks: UUID, identifiers, time, expected version")
    func envelope() {
        func decode(_ fields: String) -> EventValidationError? {
            let json = "{" + fields + #", "type": "locationServicesChanged", "data": {"enabled": true}}"#
            do {
                _ = try EventCoding.decode(EventSubmission.self, from: Data(json.utf8))
                return nil
            } catch {
                return error
            }
        }
        let good = #""id": "6f1c1f5e-5c1a-4d8e-9f00-0c2b8f9f0a11", "userId": "u", "deviceId": "d", "occurredAt": "2026-11-22T10:00:00.123+01:00""#
        #expect(decode(good) == nil)
        #expect(decode(good.replacingOccurrences(of: "6f1c1f5e-5c1a-4d8e-9f00-0c2b8f9f0a11", with: "nope"))?.field == "id")
        #expect(decode(good.replacingOccurrences(of: #""userId": "u""#, with: #""userId": "a b""#))?.field == "userId")
        #expect(decode(good.replacingOccurrences(of: #""deviceId": "d""#, with: #""deviceId": "\#(String(repeating: "d", count: 129))""#))?.field == "deviceId")
        #expect(decode(good.replacingOccurrences(of: "2026-11-22T10:00:00.123+01:00", with: "yesterday"))?.field == "occurredAt")
        #expect(decode(good + #", "expectedVersion": -1"#)?.field == "expectedVersion")
        #expect(decode(good.replacingOccurrences(of: #""userId": "u", "#, with: ""))?.kind == .missingField)
    }
}
