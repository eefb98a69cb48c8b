import Foundation
import LocationAuthorization
import LocationGateClient
import LocationGateTestKit
import Testing

/// The adapter's logic that needs no Core Location: a diagnostic's properties as flags, which
/// diagnostics are news, the Info.plist keys of the iOS 18 APIs, and what the recorder sends.
@Suite("Diagnostics, Info.plist keys and session events as the client builds them", .timeLimit(.minutes(1)))
struct SessionEventMappingTests {
    /// Every diagnostic property of every Apple type, all true.
    static var allTrue: KeyValuePairs<DiagnosticFlag, Bool> {
        [
            .authorizationDenied: true, .authorizationDeniedGlobally: true, .authorizationRestricted: true,
            .insufficientlyInUse: true, .serviceSessionRequired: true, .fullAccuracyDenied: true,
            .alwaysAuthorizationDenied: true, .authorizationRequestInProgress: true, .accuracyLimited: true,
            .locationUnavailable: true, .stationary: true, .conditionLimitExceeded: true, .conditionUnsupported: true,
            .persistenceUnavailable: true,
        ]
    }

    /// SPEC §11's table, written out: the flags each source may carry.
    static func specFlags(_ source: DiagnosticSource) -> Set<DiagnosticFlag> {
        let five: Set<DiagnosticFlag> = [
            .authorizationDenied, .authorizationDeniedGlobally, .authorizationRestricted, .insufficientlyInUse, .serviceSessionRequired,
        ]
        switch source {
        case .serviceSession:
            return five.union([.authorizationRequestInProgress, .fullAccuracyDenied, .alwaysAuthorizationDenied, .accuracyLimited])
        case .liveUpdates:
            return five.union([.authorizationRequestInProgress, .accuracyLimited, .locationUnavailable, .stationary])
        case .monitor:
            return five.union([
                .authorizationRequestInProgress, .accuracyLimited, .conditionLimitExceeded, .conditionUnsupported, .persistenceUnavailable,
            ])
        case .backgroundActivity:
            return five.union([.authorizationRequestInProgress])
        }
    }

    @Test("Every property true: each source keeps exactly its SPEC flags and a session for serviceSession alone, and the server's decoder takes the event", arguments: DiagnosticSource.allCases)
    func eachSourceKeepsItsOwnFlags(source: DiagnosticSource) throws {
        let diagnostic = Diagnostic(source, session: "nav", properties: Self.allTrue)
        #expect(diagnostic.source == source)
        #expect(diagnostic.flags == Self.specFlags(source))
        #expect(diagnostic.session == (source == .serviceSession ? "nav" : nil))
        let event = LocationEvent.diagnosticObserved(diagnostic)
        let decoded = try EventCoding.decode(LocationEvent.self, from: JSONEncoder().encode(event))
        #expect(decoded == event)
    }

    @Test("True properties become flags and false ones do not; all false is a diagnostic without flags")
    func trueAndFalseProperties() {
        let update = Diagnostic(
            .liveUpdates,
            properties: [
                .authorizationDenied: true, .authorizationDeniedGlobally: true, .authorizationRestricted: false,
                .insufficientlyInUse: false, .serviceSessionRequired: false, .authorizationRequestInProgress: false,
                .accuracyLimited: false, .locationUnavailable: false, .stationary: true,
            ])
        #expect(update == Diagnostic(source: .liveUpdates, flags: [.authorizationDenied, .authorizationDeniedGlobally, .stationary]))
        let session = Diagnostic(
            .serviceSession, session: "nav",
            properties: [.alwaysAuthorizationDenied: true, .fullAccuracyDenied: false, .authorizationRequestInProgress: false])
        #expect(session == Diagnostic(source: .serviceSession, session: "nav", flags: [.alwaysAuthorizationDenied]))
        let quiet = Diagnostic(.backgroundActivity, properties: [.authorizationDenied: false, .insufficientlyInUse: false])
        #expect(quiet == Diagnostic(source: .backgroundActivity, flags: []))
    }

    @Test("A diagnostic is news the first time, when its flags change and when they change back, per source and session")
    func diagnosticChanges() {
        var changes = DiagnosticChanges()
        let moving = Diagnostic(source: .liveUpdates, flags: [])
        let stationary = Diagnostic(source: .liveUpdates, flags: [.stationary])
        let nav = Diagnostic(source: .serviceSession, session: "nav", flags: [.insufficientlyInUse])
        let fit = Diagnostic(source: .serviceSession, session: "fit", flags: [.insufficientlyInUse])
        let monitor = Diagnostic(source: .monitor, flags: [])
        let given = [moving, moving, stationary, stationary, moving, monitor, nav, fit, nav, moving]
        let news = given.map { changes.isNew($0) }
        // The first; the same again; a change; the same; back to no flags; the first of another
        // source; a session's first, another session's first, the first session unchanged; and
        // the live updates unchanged, whatever the other sources said in between.
        #expect(news == [true, false, true, false, true, true, true, true, false, false])
    }

    @Test("Info.plist: either spelling of the explicit-session key as a Boolean, and location among UIBackgroundModes; absent is false")
    func infoPlistKeys() {
        func read(_ plist: [String: Any]) -> DeviceContext {
            DeviceContext.serviceSessionKeys { plist[$0] }
        }
        #expect(
            read(["NSLocationRequireExplicitServiceSession": true, "UIBackgroundModes": ["fetch", "location"]])
                == DeviceContext(requireExplicitServiceSession: true, backgroundLocationMode: true))
        #expect(
            read(["CLRequireExplicitServiceSession": true, "UIBackgroundModes": ["audio"]])
                == DeviceContext(requireExplicitServiceSession: true, backgroundLocationMode: false))
        #expect(
            read(["NSLocationRequireExplicitServiceSession": false, "UIBackgroundModes": "location"])
                == DeviceContext(requireExplicitServiceSession: false, backgroundLocationMode: false),
            "false, and a background mode that is not in a list")
        #expect(
            read(["NSLocationRequireExplicitServiceSession": "YES"]) == DeviceContext(requireExplicitServiceSession: false, backgroundLocationMode: false),
            "a string is not the Boolean")
        #expect(read([:]) == DeviceContext(requireExplicitServiceSession: false, backgroundLocationMode: false))
    }

    @Test("The recorder queues the session events, and sends a session and flags only where the source has them")
    func recorderBuildsSessionEvents() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let queue = try EventQueue(directory: directory.url)
        defer { queue.close() }
        let recorder = EventRecorder(userId: "u-1", deviceId: "d-1", queue: queue, clock: { ClientFixtures.time })

        let started = try recorder.sessionStarted("nav", requirement: .always, fullAccuracyPurposeKey: "nav-precise")
        #expect(started.event == .serviceSessionChanged(.started("nav", .always, fullAccuracyPurposeKey: "nav-precise")))
        #expect(started.userId == "u-1" && started.deviceId == "d-1" && started.occurredAt == ClientFixtures.time)
        #expect(try recorder.sessionInvalidated("nav").event == .serviceSessionChanged(.invalidated("nav")))
        #expect(try recorder.backgroundActivity(active: false).event == .backgroundActivityChanged(active: false))
        let session = try recorder.diagnostic(.serviceSession, session: "nav", flags: [.alwaysAuthorizationDenied, .conditionUnsupported])
        #expect(session.event == .diagnosticObserved(Diagnostic(source: .serviceSession, session: "nav", flags: [.alwaysAuthorizationDenied])))
        let monitor = try recorder.diagnostic(.monitor, session: "nav", flags: [.conditionLimitExceeded, .stationary])
        #expect(monitor.event == .diagnosticObserved(Diagnostic(source: .monitor, flags: [.conditionLimitExceeded])))
        #expect(queue.count == 5)

        // What no server would take is refused at once, and nothing is queued.
        #expect(throws: EventQueueError.self, "a serviceSession diagnostic needs its session") {
            _ = try recorder.diagnostic(.serviceSession, flags: [])
        }
        #expect(throws: EventQueueError.self, "a session key is [A-Za-z0-9._-]") {
            _ = try recorder.sessionStarted("not a key", requirement: .whenInUse)
        }
        #expect(queue.count == 5)
    }
}
