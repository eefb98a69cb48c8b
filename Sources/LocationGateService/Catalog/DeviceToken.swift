import Crypto
import Foundation
import LocationAuthorization
import LocationGateJSON

/// A device token: what a device-bound ingest key needs beside it (`X-Device-Token`). The
/// app's backend mints it for one signed-in user, and optionally one device, with the key's
/// token secret, so that a copy of the app (which holds the ingest key, and so treats it as
/// public) can append events for that user alone.
///
/// The format is a compact JWT (RFC 7519) signed with HS256 (RFC 7518 §3.2) — any backend
/// has a library that makes one: the header `{"alg": "HS256", "typ": "JWT"}` (`typ` may be
/// left out; any other `alg`, `none` included, is refused; a header with `crit` is refused
/// too, since this server understands no extension a token could call critical: RFC 7515
/// §4.1.11, SPEC §5), the claims
/// - `sub`: the user id (required; SPEC §1's identifier rules),
/// - `did`: the device id (optional; without it the token covers every device of the user),
/// - `exp`: expiry in seconds since 1970 (required; at most `maxLifetime` from now, so a
///   token that leaks stops working within a day),
/// and the HMAC-SHA256 of `header.claims` under the secret's UTF-8 bytes, all base64url
/// without padding. Other claims are ignored.
public struct DeviceToken: Sendable, Hashable {
    public var userID: String
    public var deviceID: String?
    public var expires: Date

    /// The longest lifetime a token may claim, counted from the time it is checked.
    public static let maxLifetime: TimeInterval = 24 * 60 * 60
    /// Tokens are at most this long (a header of a few dozen bytes and three short claims).
    public static let maxLength = 2048

    /// Why a token was refused (401 `unauthorized`, with this as the message).
    public enum Refusal: Error, Sendable, Hashable, CustomStringConvertible {
        case malformed
        case algorithm
        /// The header names critical extensions (`crit`), none of which this server implements.
        case criticalExtensions
        case signature
        case claims(String)
        case expired
        case tooLongLived

        public var description: String {
            switch self {
            case .malformed: "the device token is not a compact JWT (header.claims.signature, base64url)"
            case .algorithm: "the device token must be signed with HS256"
            case .criticalExtensions: "the device token's header has crit: no extension is understood here"
            case .signature: "the device token's signature does not match this key's token secret"
            case .claims(let message): "the device token's claims: \(message)"
            case .expired: "the device token has expired"
            case .tooLongLived: "the device token expires more than 24 hours from now"
            }
        }
    }

    /// Checks `token` against `secret` at `now`.
    public static func verify(_ token: String, secret: String, now: Date = Date()) throws(Refusal) -> DeviceToken {
        guard token.utf8.count <= maxLength else { throw .malformed }
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let headerData = Base64URL.decode(parts[0]), let claimsData = Base64URL.decode(parts[1]),
              let signature = Base64URL.decode(parts[2])
        else { throw .malformed }
        guard let header = Self.object(headerData) else { throw .malformed }
        guard header["alg"]?.string == "HS256" else { throw .algorithm }
        // RFC 7515 §4.1.11: a recipient that does not understand every extension `crit` lists
        // must refuse the token; this one understands none (an empty list is invalid too).
        guard header["crit"] == nil else { throw .criticalExtensions }
        if let type = header["typ"], type.string?.uppercased() != "JWT" { throw .malformed }
        let signed = Data(token.utf8.prefix(parts[0].utf8.count + 1 + parts[1].utf8.count))
        let key = SymmetricKey(data: Data(secret.utf8))
        guard HMAC<SHA256>.isValidAuthenticationCode(signature, authenticating: signed, using: key) else { throw .signature }
        guard let claims = Self.object(claimsData) else { throw .malformed }
        guard let user = claims["sub"]?.string, EventSubmission.isValidIdentifier(user) else {
            throw .claims("sub must be a user id (\(EventSubmission.identifierRule))")
        }
        var device: String?
        if let value = claims["did"] {
            guard let text = value.string, EventSubmission.isValidIdentifier(text) else {
                throw .claims("did must be a device id (\(EventSubmission.identifierRule))")
            }
            device = text
        }
        guard let seconds = claims["exp"]?.number, seconds.isFinite else {
            throw .claims("exp (seconds since 1970) is required")
        }
        guard seconds > now.timeIntervalSince1970 else { throw .expired }
        guard seconds <= now.timeIntervalSince1970 + maxLifetime else { throw .tooLongLived }
        return DeviceToken(userID: user, deviceID: device, expires: Date(timeIntervalSince1970: seconds))
    }

    /// Whether an event for `userID`/`deviceID` is one this token covers.
    public func covers(userID: String, deviceID: String) -> Bool {
        userID == self.userID && (self.deviceID == nil || self.deviceID == deviceID)
    }

    /// A header or the claims: a JSON object in UTF-8, each key once (RFC 7515 §5.2 lets a
    /// recipient refuse duplicate names rather than guess which one counts); nil otherwise.
    private static func object(_ data: Data) -> JSONNode? {
        guard let text = String(data: data, encoding: .utf8), let node = JSONNode.parse(text), case .object = node,
              node.hasUniqueKeys
        else { return nil }
        return node
    }

    /// Makes a token (tests, tools, and a reference for backends): the claims `did` (when
    /// given), `exp` and `sub`, in that order.
    public static func sign(userID: String, deviceID: String? = nil, expires: Date, secret: String) -> String {
        var claims = JSONWriter(capacity: 96)
        claims.objectStart()
        claims.fieldIfPresent("did", deviceID)
        claims.field("exp", Int(expires.timeIntervalSince1970))
        claims.field("sub", userID)
        claims.objectEnd()
        let header = Base64URL.encode(Data(#"{"alg":"HS256","typ":"JWT"}"#.utf8))
        let body = Base64URL.encode(Data(claims.bytes))
        let mac = HMAC<SHA256>.authenticationCode(for: Data("\(header).\(body)".utf8), using: SymmetricKey(data: Data(secret.utf8)))
        return "\(header).\(body).\(Base64URL.encode(Data(mac)))"
    }
}
