import Foundation
import Testing

@testable import LocationAuthorization

/// A device that reported `appVersion` in a later context (C1: the other fields stay).
func reporting(_ appVersion: String, _ state: DeviceState) -> DeviceState {
    var state = state
    state.accept(.contextReported(DeviceContext(appVersion: appVersion)))
    return state
}

@Suite("Safe catalog changes: the kill switch and the app version floor (SPEC §15)", .timeLimit(.minutes(1)))
struct CatalogSwitchTests {
    let nearby = Feature(key: "nearby", requires: .whenInUse, services: [.standard])
    let arrival = Feature(key: "arrival-lights", requires: .always, services: [.regionMonitoring])
    let precise = Feature(key: "turn-by-turn", requires: .whenInUse, services: [.standard], accuracy: .full)

    func switched(_ feature: Feature, disabled: Bool = false, floor: String? = nil) -> Feature {
        var feature = feature
        feature.disabled = disabled
        feature.minAppVersion = floor.flatMap(AppVersion.init)
        return feature
    }

    func expect(
        _ decision: GateDecision, _ reason: GateReason, _ action: GateAction, sourceLocation: SourceLocation = #_sourceLocation
    ) {
        #expect(!decision.enabled, sourceLocation: sourceLocation)
        #expect(decision.reason == reason, sourceLocation: sourceLocation)
        #expect(decision.action == action, sourceLocation: sourceLocation)
        #expect(decision.missingKeys == nil, sourceLocation: sourceLocation)
    }

    /// Devices of every kind of row of both platforms' tables.
    var devices: [(String, DeviceState)] {
        var restricted = whenInUseDevice()
        restricted.accept(.restrictionChanged(restricted: true))
        var denied = makeDevice()
        denied.accept([requestWhenInUse, respond(.dontAllow)])
        var pending = makeDevice()
        pending.accept(requestWhenInUse)
        var reduced = whenInUseDevice()
        reduced.accept(.settingsChanged(authorization: nil, preciseLocation: false))
        var androidGranted = androidDevice(api: 34)
        androidGranted.accept(observed(foregroundPermissions))
        var androidBlocked = androidDevice(api: 34)
        for _ in 0..<2 {
            androidBlocked.accept(request(foregroundPermissions))
            androidBlocked.accept(result([], denied: foregroundPermissions))
        }
        return [
            ("new device", DeviceState()), ("restricted", restricted), ("denied", denied), ("prompt pending", pending),
            ("When In Use", whenInUseDevice()), ("reduced accuracy", reduced), ("provisional Always", provisionalDevice()),
            ("tvOS", makeDevice(.tvOS)), ("macOS", whenInUseDevice(.macOS)), ("no keys", makeDevice(.iOS, "17.0", keys: [])),
            ("Android new", androidDevice(api: 34)), ("Android granted", androidGranted), ("Android blocked", androidBlocked),
            ("Android coarse only", androidDevice(api: 34, declared: [.coarse])),
        ]
    }

    @Test("Row disabled: before every row of both platforms' tables, the services included; the real status and accuracy")
    func killSwitchFirst() {
        for (name, state) in devices {
            for feature in [nearby, arrival, precise] {
                let normal = state.decide(feature, version: 7)
                let decision = state.decide(switched(feature, disabled: true), version: 7)
                expect(decision, .disabledByOperator, .none)
                #expect(decision.ofrepReason == "DISABLED", "\(name)")
                #expect(decision.status == state.status && decision.accuracy == state.effectiveAccuracy, "\(name)")
                #expect(decision.provisional == state.provisional && decision.temporary == state.temporary, "\(name)")
                #expect(decision.requiredTier == normal.requiredTier && decision.version == 7 && decision.feature == feature.key, "\(name)")
            }
        }
    }

    @Test("Row disabled comes before row minAppVersion")
    func killSwitchBeforeFloor() {
        for (_, state) in devices {
            expect(state.decide(switched(nearby, disabled: true, floor: "99"), version: 1), .disabledByOperator, .none)
            expect(reporting("1.0", state).decide(switched(precise, disabled: true, floor: "2"), version: 1), .disabledByOperator, .none)
        }
    }

    @Test("Row minAppVersion: a lower or absent appVersion is appVersionTooOld / updateApp, before every row of both tables")
    func floorSecond() {
        for (name, state) in devices {
            for feature in [nearby, arrival, precise] {
                // No context has reported an appVersion yet: absent.
                #expect(state.context.appVersion == nil)
                let absent = state.decide(switched(feature, floor: "1"), version: 3)
                expect(absent, .appVersionTooOld, .updateApp)
                #expect(absent.ofrepReason == "TARGETING_MATCH", "\(name)")
                #expect(absent.status == state.status && absent.accuracy == state.effectiveAccuracy, "\(name)")
                let old = reporting("5.1.9", state)
                expect(old.decide(switched(feature, floor: "5.2"), version: 3), .appVersionTooOld, .updateApp)
                // Met: the platform's table decides, as without a floor.
                let current = reporting("5.2.1-beta", state)
                #expect(current.decide(switched(feature, floor: "5.2"), version: 3) == current.decide(feature, version: 3), "\(name)")
                #expect(current.decide(switched(feature, floor: "5.2.1"), version: 3) == current.decide(feature, version: 3), "\(name)")
            }
        }
    }

    @Test("A met floor leaves the enabled rows enabled, on Apple's platforms and on Android")
    func floorMetEnabled() {
        var granted = androidDevice(api: 34)
        granted.accept(observed(foregroundPermissions))
        for state in [whenInUseDevice(), provisionalDevice(), granted] {
            let decision = reporting("6.0", state).decide(switched(nearby, floor: "5.2"), version: 4)
            #expect(decision.enabled && decision.reason == .authorized && decision.action == .none)
            #expect(decision.ofrepReason == "TARGETING_MATCH")
            expect(reporting("4", state).decide(switched(nearby, floor: "5.2"), version: 4), .appVersionTooOld, .updateApp)
        }
    }

    @Test("The version comparison: number by number, missing numbers as 0, a suffix after the numbers ignored")
    func comparison() throws {
        let table: [(floor: String, reported: String?, met: Bool)] = [
            ("5.2", "5.2", true), ("5.2", "5.2.0", true), ("5.2", "5.2.0.0.0", true), ("5.2.0.0", "5.2", true),
            ("5.2", "5.10", true), ("5.10", "5.9", false), ("5.2", "5.1.99", false), ("5.2", "6", true),
            ("5.2", "5", false), ("5", "5", true), ("5.0.1", "5", false), ("5.0.1", "5.0.0.9", false),
            ("5.2", "5.2.1-beta", true), ("5.2.1", "5.2.1-beta", true), ("5.2.2", "5.2.1-beta", false),
            ("5.2", "5.2-rc1", true), ("5.2", "5.2 (403)", true), ("5.2", "5.2.", true), ("5.3", "5.2.", false),
            ("5.2", "5..3", false), ("5", "5..3", true), ("5.2", "5.2.x", true), ("5.2", "05.02", true),
            ("5.2", "v5.2", false), ("0", "v5.2", true), ("0", "beta", true), ("0.0.0.1", "beta", false),
            ("5.2", nil, false), ("0", nil, false),
            ("1.2.3.4", "1.2.3.4", true), ("1.2.3.4", "1.2.3.3.9", false), ("1.2.3.4", "1.2.3.4.1", true),
            ("1.2.3.5", "1.2.3.4.99", false),
            ("999999999999999999", "1000000000000000000", true), ("999999999999999999", "999999999999999998", false),
            ("1", "99999999999999999999999999999", true), ("2", "1.99999999999999999999999999", false),
        ]
        for row in table {
            let floor = try #require(AppVersion(row.floor), "\(row.floor)")
            #expect(floor.isMet(by: row.reported) == row.met, "floor \(row.floor), appVersion \(row.reported ?? "absent")")
        }
    }

    @Test("A floor is 1 to 4 dot-separated numbers of 1 to 18 digits, kept as written")
    func floorForm() {
        for valid in ["0", "5", "5.2", "05.2", "5.2.1.0", "2024.11.3.7", "999999999999999999"] {
            #expect(AppVersion(valid)?.text == valid, "\(valid)")
        }
        #expect(AppVersion("05.2")?.numbers == [5, 2])
        for invalid in ["", ".", "5.", ".5", "5..2", "5.2.1.0.1", "5.2-beta", "v5", " 5", "5 ", "5,2", "1234567890123456789", "５", "-1", "+1"] {
            #expect(AppVersion(invalid) == nil, "\(invalid)")
        }
    }

    @Test("OFREP's reason: DISABLED for the kill switch, TARGETING_MATCH for every other decision")
    func ofrepReason() {
        for reason in GateReason.allCases {
            let decision = GateDecision(
                feature: "f", enabled: reason == .authorized, reason: reason, action: .none, status: .notDetermined,
                provisional: false, temporary: false, accuracy: .full, requiredTier: .whenInUse, version: 0)
            #expect(decision.ofrepReason == (reason == .disabledByOperator ? "DISABLED" : "TARGETING_MATCH"), "\(reason)")
        }
    }

    @Test("A feature's JSON: disabled false and minAppVersion null by default, both read back; older stored forms read")
    func featureJSON() throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let plain = try JSONSerialization.jsonObject(with: encoder.encode(nearby)) as? [String: Any]
        #expect(plain?["disabled"] as? Bool == false)
        #expect(plain?["minAppVersion"] is NSNull)
        let switchedOff = switched(arrival, disabled: true, floor: "05.2")
        let text = try encoder.encode(switchedOff)
        let object = try JSONSerialization.jsonObject(with: text) as? [String: Any]
        #expect(object?["disabled"] as? Bool == true && object?["minAppVersion"] as? String == "05.2")
        #expect(try JSONDecoder().decode(Feature.self, from: text) == switchedOff)
        // A definition stored before the fields existed.
        let old = #"{"key": "nearby", "requires": "whenInUse", "services": ["standard"], "accuracy": "any"}"#
        let read = try JSONDecoder().decode(Feature.self, from: Data(old.utf8))
        #expect(!read.disabled && read.minAppVersion == nil && read == nearby)
        let bad = #"{"key": "n", "requires": "whenInUse", "services": [], "accuracy": "any", "minAppVersion": "5.x"}"#
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(Feature.self, from: Data(bad.utf8)) }
    }
}
