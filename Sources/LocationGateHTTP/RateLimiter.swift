import Foundation
import Hummingbird
import LocationGateService
import Synchronization

/// Per-key request limits (SPEC §5: configurable, off by default): a token bucket per key,
/// `requestsPerSecond` refilled continuously up to `burst`. Over the limit is 429 with
/// Retry-After in whole seconds.
final class RateLimiter: Sendable {
    private struct Bucket {
        var tokens: Double
        var updated: ContinuousClock.Instant
    }

    let requestsPerSecond: Double
    let burst: Double
    private let buckets = Mutex<[UUID: Bucket]>([:])

    init(requestsPerSecond: Double, burst: Double) {
        self.requestsPerSecond = requestsPerSecond
        self.burst = max(1, burst)
    }

    /// Nil when allowed, else the seconds to wait.
    func acquire(_ key: UUID) -> Int? {
        let now = ContinuousClock.now
        return buckets.withLock { buckets in
            var bucket = buckets[key] ?? Bucket(tokens: burst, updated: now)
            let elapsed = now - bucket.updated
            let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
            bucket.tokens = min(burst, bucket.tokens + seconds * requestsPerSecond)
            bucket.updated = now
            if bucket.tokens >= 1 {
                bucket.tokens -= 1
                buckets[key] = bucket
                return nil
            }
            buckets[key] = bucket
            return max(1, Int(((1 - bucket.tokens) / requestsPerSecond).rounded(.up)))
        }
    }
}

/// Applies the limiter to requests made with an app key.
struct RateLimitMiddleware: RouterMiddleware {
    typealias Context = AppRequestContext
    let limiter: RateLimiter

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        if let identity = context.identity, let wait = limiter.acquire(identity.keyID) {
            if request.uri.path.hasPrefix("/ofrep/") {
                var response = try OFREPError.response(.tooManyRequests, key: nil, code: "GENERAL", details: "rate limited")
                response.headers[.retryAfter] = String(wait)
                return response
            }
            throw APIError(ServiceError(.rateLimited, "too many requests for this key; retry after \(wait) s"), retryAfter: wait)
        }
        return try await next(request, context)
    }
}
