import Foundation
import HTTPTypes
import Hummingbird
import LocationGateService

/// Reads `Authorization: Bearer KEY` (and, for OFREP, `X-API-Key`), and resolves it to the
/// admin token or an app key. Route groups then require what their routes need
/// (`RequireScope`, which `require(_:)` answers for).
///
/// SPEC §5 "Resources": failed authentications are throttled, but a valid key is never refused
/// because others sent invalid ones, and the work invalid keys cause is bounded. So every token
/// is checked before anything is refused: the admin token by comparison, text not shaped like
/// a key and keys remembered as unknown without the database, any other key by a look-up
/// (`APIKeys`, batched and bounded there). Only a token found invalid spends its peer
/// address's budget of failures (`failures`, shared by every group of one router and the
/// dashboard's sign-in); past it, the answer to an invalid token is 429 with Retry-After
/// instead of 401, which tells a guesser to slow down. A valid key passes whatever its
/// address spent, so everyone behind one proxy keeps working while someone there guesses.
struct AuthenticationMiddleware: RouterMiddleware {
    typealias Context = AppRequestContext

    let keys: any KeyAuthenticating
    let adminToken: String?
    let failures: RateLimiter

    /// The bucket a peer's failures are counted in: its IP address (the port left out) as 128
    /// bits of this process's seeded hash, or one shared bucket for a peer without an address.
    static func failureBucket(_ context: AppRequestContext) -> UUID {
        guard let address = context.remoteAddress?.ipAddress else { return UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)) }
        var first = Hasher(), second = Hasher()
        first.combine(0)
        first.combine(address)
        second.combine(1)
        second.combine(address)
        let a = UInt64(bitPattern: Int64(first.finalize())), b = UInt64(bitPattern: Int64(second.finalize()))
        let bytes = (0..<8).map { UInt8(truncatingIfNeeded: a >> ($0 * 8)) } + (0..<8).map { UInt8(truncatingIfNeeded: b >> ($0 * 8)) }
        return UUID(uuid: (
            bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7],
            bytes[8], bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]))
    }

    static func failureLimiter(_ configuration: ServerConfiguration) -> RateLimiter {
        RateLimiter(requestsPerSecond: configuration.failedAuthenticationRate, burst: configuration.failedAuthenticationBurst)
    }

    static let apiKeyHeader = HTTPField.Name("X-API-Key")

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        if let token = Self.token(in: request) {
            if let adminToken, !adminToken.isEmpty, Self.constantTimeEqual(token, adminToken) {
                context.isAdminToken = true
            } else if let known = keys.cachedIdentity(forKey: token) {
                // The usual case, without awaiting `identity(forKey:)`: an await of a call that
                // would not suspend still costs its frame.
                context.identity = known
            } else {
                context.identity = try await Self.identity(forKey: String(token), keys: keys, failures: failures, context: context)
            }
        }
        return try await next(request, context)
    }

    /// The identity behind an app key, nil when the token is no live key. The key is checked
    /// first (without the database when the process knows the answer); only then does an
    /// invalid one spend the peer's budget of failures, and past it the answer is 429 instead
    /// of nil. A valid key is never refused here. The API's groups and the dashboard's
    /// sign-in share it.
    static func identity(
        forKey token: String, keys: any KeyAuthenticating, failures: RateLimiter, context: AppRequestContext
    ) async throws(APIError) -> APIIdentity? {
        let identity: APIIdentity?
        do {
            identity = try await keys.identity(forKey: token)
        } catch {
            throw APIError(ServiceError.from(error))
        }
        if identity == nil, let wait = failures.acquire(failureBucket(context)) {
            throw APIError(ServiceError(.rateLimited, "too many failed authentications; retry after \(wait) s"), retryAfter: wait)
        }
        return identity
    }

    /// The key of `Authorization: Bearer <key>` (the scheme in any case) or of the key header,
    /// as a slice of the header's value. Parsed on its UTF-8 view, without copying its bytes or
    /// joining its values: Foundation's `trimmingCharacters(in:)` was 7% of a cached gate, and
    /// a cached key is hashed from the slice without a string of its own.
    static func token(in request: Request) -> Substring? {
        if let header = value(of: .authorization, in: request.headers) {
            let scheme = "bearer ".utf8
            let bytes = header.utf8
            if bytes.count > scheme.count, zip(bytes, scheme).allSatisfy({ $0 == $1 || ($1 != UInt8(ascii: " ") && $0 == $1 - 0x20) }) {
                return trimmed(header[bytes.index(bytes.startIndex, offsetBy: scheme.count)...])
            }
        }
        if let name = apiKeyHeader, let key = value(of: name, in: request.headers) {
            return trimmed(key[...])
        }
        return nil
    }

    /// A field's value: the one field of that name as it is, several joined as `HTTPFields`
    /// joins them (which no key survives), so that the join is paid only when there is one.
    private static func value(of name: HTTPField.Name, in fields: HTTPFields) -> String? {
        var found: String?
        for field in fields where field.name == name {
            guard found == nil else { return fields[name] }
            found = field.value
        }
        return found
    }

    /// The text without leading and trailing spaces and tabs.
    private static func trimmed(_ text: Substring) -> Substring {
        func isBlank(_ byte: UInt8) -> Bool { byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") }
        let bytes = text.utf8
        guard let start = bytes.firstIndex(where: { !isBlank($0) }), let last = bytes.lastIndex(where: { !isBlank($0) }) else {
            return text[text.endIndex...]
        }
        return text[start...last]
    }

    static func constantTimeEqual(_ a: some StringProtocol, _ b: some StringProtocol) -> Bool {
        let left = Array(a.utf8)
        let right = Array(b.utf8)
        guard left.count == right.count else { return false }
        var difference: UInt8 = 0
        for index in left.indices { difference |= left[index] ^ right[index] }
        return difference == 0
    }
}

/// What an endpoint needs of its caller.
enum Requirement: Sendable {
    case ingest
    case read
    case admin
    /// Any of the app's keys, whatever its scope.
    case anyKey
}

extension AppRequestContext {
    /// The caller's app, if the key's scope allows `requirement`; 401 without a key, 403 with
    /// the wrong scope (or the admin token, which only creates apps).
    func require(_ requirement: Requirement) throws -> APIIdentity {
        guard let identity else {
            if isAdminToken { throw APIError(.forbidden, "the admin token only creates apps; use an app key") }
            throw APIError(.unauthorized, "a valid API key is required (Authorization: Bearer KEY)")
        }
        let allowed: Bool
        switch requirement {
        case .ingest: allowed = identity.scope == .ingest || identity.scope == .admin
        case .read: allowed = identity.scope == .read || identity.scope == .admin
        case .admin: allowed = identity.scope == .admin
        case .anyKey: allowed = true
        }
        guard allowed else {
            throw APIError(.forbidden, "a key with scope \(identity.scope.rawValue) may not do this")
        }
        return identity
    }
}
