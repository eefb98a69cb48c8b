import EventLog
import Foundation
import LocationAuthorization
import Testing

@testable import LocationGateService

/// What each location button event counts as (SPEC §12, "Analytics"), as the append computes it
/// and stores it in the outcome: the counters of `GET /v1/analytics/location-button`, one per
/// field of its row, for every path of B1-B4.
@Suite("Location button analytics: what each event counts as", .timeLimit(.minutes(1)))
struct LocationButtonCountTests {
    static func context(targetSdk: Int) -> LocationEvent {
        .contextReported(DeviceContext(
            platform: .android, appVersion: "5.0", apiLevel: 37, targetSdk: targetSdk, declaredPermissions: [.coarse, .fine, .locationButton]))
    }

    static let opened = LocationEvent.locationButtonSession(.opened)
    static let closed = LocationEvent.locationButtonSession(.closed)
    static let granted = LocationEvent.locationButtonResult(granted: true)
    static let refused = LocationEvent.locationButtonResult(granted: false)
    /// B6: the one-time grant lapses in the background; the app comes back.
    static let lapse: [LocationEvent] = [
        .appStateChanged(.background, backgroundIndicator: false, foregroundService: false),
        .permissionsObserved(granted: [], locationEnabled: nil),
        .appStateChanged(.foreground, backgroundIndicator: false, foregroundService: false),
    ]

    /// Applies the events to a new device after its context, as the append does, and returns
    /// the fields each adds one to. Each outcome's stored form reads back equal, and carries no
    /// analytics when the event counts for nothing.
    static func counted(_ events: [LocationEvent], targetSdk: Int = 37) throws -> [[String]] {
        var device = DeviceStateStore.Row(
            key: StreamKey(appID: UUID(), userID: "u", deviceID: "d"), version: 0, state: DeviceState(), milestones: [])
        _ = try DeviceProjector.apply(context(targetSdk: targetSdk), to: &device)
        var fields: [[String]] = []
        for event in events {
            let outcome = try DeviceProjector.apply(event, to: &device)
            #expect(try JSONText.outcome(outcome.storedJSON) == outcome, "\(outcome.storedJSON)")
            let counters = outcome.analytics?.counters(effects: outcome.effects, choice: nil, type: event.type) ?? []
            let button = counters.filter { $0.metric == "locationButton" }.map { $0.key }
            #expect(button.allSatisfy { LocationButtonCount.fields.contains($0) }, "\(button)")
            if button.isEmpty { #expect(outcome.analytics?.locationButton == nil) }
            fields.append(button)
        }
        return fields
    }

    @Test("B1: every opened session and every failure count; a closed session counts for nothing and stores no analytics")
    func sessions() throws {
        let failedWithCause = LocationEvent.locationButtonSession(.failed, cause: "SecurityException")
        let failed = LocationEvent.locationButtonSession(.failed)
        #expect(try Self.counted([Self.opened, Self.opened, Self.closed, Self.closed, Self.opened, failedWithCause, failed]) == [
            ["sessions"], ["sessions"], [], [], ["sessions"], ["failures"], ["failures"],
        ])
        var device = DeviceStateStore.Row(
            key: StreamKey(appID: UUID(), userID: "u", deviceID: "d"), version: 0, state: DeviceState(), milestones: [])
        _ = try DeviceProjector.apply(Self.context(targetSdk: 37), to: &device)
        let close = try DeviceProjector.apply(Self.closed, to: &device)
        #expect(close.analytics == nil && !close.storedJSON.contains("analytics"))
        let open = try DeviceProjector.apply(Self.opened, to: &device)
        #expect(open.storedJSON.contains(#""locationButton":"opened""#), "\(open.storedJSON)")
    }

    @Test("B2, B3: the consent dialog (prompted), then a grant while precise is held (alreadyGranted); after two consents a direct grant")
    func grants() throws {
        #expect(try Self.counted([Self.granted, Self.granted]) == [["results", "prompted"], ["results", "alreadyGranted"]])
        let twoConsents = [Self.granted] + Self.lapse + [Self.granted] + Self.lapse
        let fields = try Self.counted(twoConsents + [Self.granted])
        #expect(fields.filter { !$0.isEmpty } == [["results", "prompted"], ["results", "prompted"], ["results", "direct"]], "\(fields)")
    }

    @Test("B4: Don't allow is prompted and denied; then blocked; a refused direct grant is notGrantable; below targetSdk 31 only a result")
    func refusals() throws {
        #expect(try Self.counted([Self.refused, Self.refused, Self.refused]) == [
            ["results", "prompted", "denied"], ["results", "prompted", "denied"], ["results", "blocked"],
        ])
        let twoConsents = [Self.granted] + Self.lapse + [Self.granted] + Self.lapse
        #expect(try Self.counted(twoConsents + [Self.refused]).last == ["results", "notGrantable"])
        #expect(try Self.counted([Self.refused], targetSdk: 30) == [["results"]])
    }

    @Test("The dialog is also the locationButton prompt: shown, answered and inferred, its choice, a grant only for allow")
    func prompt() throws {
        var device = DeviceStateStore.Row(
            key: StreamKey(appID: UUID(), userID: "u", deviceID: "d"), version: 0, state: DeviceState(), milestones: [])
        _ = try DeviceProjector.apply(Self.context(targetSdk: 37), to: &device)
        for (event, choice, granted) in [(Self.refused, "dontAllow", false), (Self.granted, "allow", true)] {
            let outcome = try DeviceProjector.apply(event, to: &device)
            let counters = (outcome.analytics?.counters(effects: outcome.effects, choice: nil, type: event.type) ?? []).map { "\($0.metric) \($0.key)" }
            #expect(counters.contains("promptShown locationButton") && counters.contains("promptAnswered locationButton"), "\(counters)")
            #expect(counters.contains("promptInferred locationButton") && counters.contains("promptChoice locationButton:\(choice)"), "\(counters)")
            #expect(counters.contains("promptGranted locationButton") == granted && !counters.contains("promptAlways locationButton"), "\(counters)")
        }
    }
}
