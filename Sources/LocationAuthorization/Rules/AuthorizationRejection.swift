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
    }

    public var code: Code
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code.rawValue): \(message)" }
}
