/// An event the rules of SPEC §3 refuse: it is answered with 422 `ruleViolation` and nothing of
/// its batch is stored. The code is stable for clients to match on; the message is for people.
public struct AuthorizationRejection: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Code: String, Sendable, Hashable, Codable {
        /// `promptResponded` with no prompt on screen.
        case noPromptPending
        /// `promptResponded` with a choice the pending prompt does not offer.
        case choiceNotOffered
        /// A request the platform does not support (A9: Always on tvOS).
        case unsupportedRequest
        /// A Settings value the platform does not have (T1: Always on tvOS and visionOS).
        case unsupportedSetting
        /// A new service session on a device that already holds `ServiceSessionState.maxSessions`.
        case tooManySessions
        /// An event type, or a field, the device's platform family does not have (SPEC §11,
        /// §12): a 422 `validationFailed` naming `field`.
        case notOnThisPlatform
        /// The first Android context lacks `apiLevel` or `targetSdk` (422 `validationFailed`).
        case missingAndroidLevel
        /// A context naming the other platform family than the device's (422 `ruleViolation`).
        case platformFamilyChanged
        /// A location button event from a device where the button is not available: below API
        /// 37, or `locationButton` or `fine` not declared (SPEC §12; 422 `ruleViolation`).
        case locationButtonUnavailable
        /// `fineOnlyForLocationButton` true on a context whose manifest does not declare `fine`
        /// (SPEC §12; 422 `validationFailed` naming the field).
        case fineNotDeclared
    }

    public var code: Code
    public var message: String
    /// The field at fault, for refusals that are about the event's vocabulary on this device
    /// rather than the rules: they are answered as `validationFailed`, not `ruleViolation`.
    public var field: String?

    public init(_ code: Code, _ message: String, field: String? = nil) {
        self.code = code
        self.message = message
        self.field = field
    }

    /// Answered as 422 `validationFailed` (a value this device cannot have) rather than
    /// `ruleViolation`.
    public var isValidation: Bool { field != nil }

    public var description: String { "\(code.rawValue): \(message)" }
}

extension AuthorizationRejection {
    /// An event type the device's platform family does not have (`EventType.traits`): a 422
    /// naming `type`, with the types the family does have.
    static func notAccepted(_ type: EventType, by family: PlatformFamily, on platform: Platform) -> AuthorizationRejection {
        switch family {
        case .android:
            AuthorizationRejection(
                .notOnThisPlatform,
                "type: \(type.rawValue) is not an Android event; an Android device reports "
                    + EventType.allCases.filter { $0.isAccepted(by: .android) }.map(\.rawValue).joined(separator: ", "),
                field: "type")
        case .apple:
            AuthorizationRejection(
                .notOnThisPlatform, "type: \(type.rawValue) is an Android event; this device is \(platform.rawValue)", field: "type")
        }
    }
}
