import Foundation
import Hummingbird
import LocationGateService
import Synchronization

/// Per-app request limits (SPEC §5: configurable, counting all of an app's keys together, off
/// by default): a token bucket per app, `requestsPerSecond` refilled continuously up to
/// `burst`. Over the limit is 429 with Retry-After in whole seconds.
///
/// Buckets expire: a bucket idle long enough to have refilled is the same as no bucket, so
/// every `sweepInterval` acquisitions such buckets are dropped, and the map holds only the apps
/// active in the last few seconds.
final class RateLimiter: Sendable {
    private struct Bucket {
        var tokens: Double
        var updated: ContinuousClock.Instant
    }

    private struct State {
        var buckets: [UUID: Bucket] = [:]
        var acquisitions = 0
    }

    let requestsPerSecond: Double
    let burst: Double
    static let sweepInterval = 4096
    private let state = Mutex(State())

    init(requestsPerSecond: Double, burst: Double) {
        self.requestsPerSecond = requestsPerSecond
        self.burst = max(1, burst)
    }

    /// Nil when allowed, else the seconds to wait.
    func acquire(_ appID: UUID, now: ContinuousClock.Instant = .now) -> Int? {
        state.withLock { state in
            state.acquisitions += 1
            if state.acquisitions % Self.sweepInterval == 0 { sweep(&state.buckets, now: now) }
            var bucket = state.buckets[appID] ?? Bucket(tokens: burst, updated: now)
            bucket.tokens = refilled(bucket, now: now)
            bucket.updated = now
            if bucket.tokens >= 1 {
                bucket.tokens -= 1
                state.buckets[appID] = bucket
                return nil
            }
            state.buckets[appID] = bucket
            return max(1, Int(((1 - bucket.tokens) / requestsPerSecond).rounded(.up)))
        }
    }

    /// Takes a token of the app's bucket, or throws 429 `rateLimited` with Retry-After.
    func charge(_ appID: UUID) throws(APIError) {
        if let wait = acquire(appID) {
            throw APIError(ServiceError(.rateLimited, "too many requests for this app; retry after \(wait) s"), retryAfter: wait)
        }
    }

    /// Nil when a token is left, else the seconds to wait; takes none.
    func peek(_ appID: UUID, now: ContinuousClock.Instant = .now) -> Int? {
        state.withLock { state in
            guard let bucket = state.buckets[appID] else { return nil }
            let tokens = refilled(bucket, now: now)
            return tokens >= 1 ? nil : max(1, Int(((1 - tokens) / requestsPerSecond).rounded(.up)))
        }
    }

    /// Buckets held now.
    var count: Int { state.withLock { $0.buckets.count } }

    private func refilled(_ bucket: Bucket, now: ContinuousClock.Instant) -> Double {
        let elapsed = now - bucket.updated
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        return min(burst, bucket.tokens + seconds * requestsPerSecond)
    }

    /// Drops the buckets that are full again.
    private func sweep(_ buckets: inout [UUID: Bucket], now: ContinuousClock.Instant) {
        buckets = buckets.filter { refilled($0.value, now: now) < burst }
    }
}

/// Applies the limiter to requests made with an app key.
struct RateLimitMiddleware: RouterMiddleware {
    typealias Context = AppRequestContext
    let limiter: RateLimiter

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        if let identity = context.identity { try limiter.charge(identity.appID) }
        return try await next(request, context)
    }
}
