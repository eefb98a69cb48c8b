import Testing

@testable import LocationAuthorization

/// Builds a device on a platform and OS version, with the given Info.plist keys (all by default).
func makeDevice(
    _ platform: Platform = .iOS, _ os: String? = nil, keys: Set<String>? = nil, purposeKeys: Set<String>? = nil
) -> DeviceState {
    var state = DeviceState()
    let context = DeviceContext(
        platform: platform, osVersion: os.flatMap(OSVersion.init), usageDescriptions: keys,
        temporaryUsagePurposeKeys: purposeKeys)
    _ = try? state.apply(.contextReported(context))
    return state
}

extension DeviceState {
    /// Applies an event that the rules must accept, and returns its effects.
    @discardableResult
    mutating func accept(_ event: LocationEvent, sourceLocation: SourceLocation = #_sourceLocation) -> [Effect] {
        do {
            return try apply(event)
        } catch {
            Issue.record("unexpected rejection \(error)", sourceLocation: sourceLocation)
            return []
        }
    }

    /// Applies events in order, all of which must be accepted.
    mutating func accept(_ events: [LocationEvent], sourceLocation: SourceLocation = #_sourceLocation) {
        for event in events { accept(event, sourceLocation: sourceLocation) }
    }

    /// Expects a rejection with the given code and that the state stays as it was.
    mutating func expectRejection(
        _ event: LocationEvent, _ code: AuthorizationRejection.Code, sourceLocation: SourceLocation = #_sourceLocation
    ) {
        let before = self
        do {
            _ = try apply(event)
            Issue.record("expected rejection \(code)", sourceLocation: sourceLocation)
        } catch {
            #expect(error.code == code, sourceLocation: sourceLocation)
            #expect(self == before, "a rejected event must not change the state", sourceLocation: sourceLocation)
        }
    }
}

let requestWhenInUse = LocationEvent.authorizationRequested(.whenInUse)
let requestAlways = LocationEvent.authorizationRequested(.always)
func respond(_ choice: PromptChoice) -> LocationEvent { .promptResponded(choice) }

/// A device that answered the When In Use prompt with Allow While Using.
func whenInUseDevice(_ platform: Platform = .iOS, _ os: String? = nil, keys: Set<String>? = nil) -> DeviceState {
    var state = makeDevice(platform, os, keys: keys)
    state.accept([requestWhenInUse, respond(.allowWhileUsing)])
    return state
}

/// A device in Provisional Always (A3 then P2 Allow While Using).
func provisionalDevice() -> DeviceState {
    var state = makeDevice()
    state.accept([requestAlways, respond(.allowWhileUsing)])
    return state
}

let allKeysButAlways: Set<String> = [UsageDescriptionKey.whenInUse]
