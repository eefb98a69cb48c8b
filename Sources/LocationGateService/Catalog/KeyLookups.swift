import DequeModule
import Foundation
import Metrics
import PostgresClient
import Synchronization

/// The database side of key verification, bounded whatever callers send (SPEC §5
/// "Resources": a valid key is never refused because others sent invalid ones, and the work
/// invalid keys cause is bounded).
///
/// Every key that passes the shape check and misses both caches must be looked up: only the
/// database knows whether it exists, and refusing it unchecked would refuse a valid key with
/// it. So look-ups are never refused, only batched: at most `maxInFlight` statements run at
/// once, each checking up to `batchLimit` keys with one indexed `= ANY(...)` probe per key.
/// A caller that finds every statement busy waits in a queue, and the caller that finishes a
/// statement hands the next one, with up to `batchLimit` of the waiters, to the first of them
/// (no task of its own). A flood of invalid keys therefore holds at most `maxInFlight`
/// connections and costs the database one index probe per distinct key, while a valid key
/// waits at most for the batches ahead of it.
final class KeyLookups: Sendable {
    /// Keys one statement checks at most.
    static let batchLimit = 500

    /// Statements in flight at most.
    let maxInFlight: Int

    private struct Waiter: Sendable {
        var digest: String
        var continuation: CheckedContinuation<Wake, Never>
    }

    /// What a waiting caller is woken with.
    private enum Wake: Sendable {
        case answered(APIIdentity?)
        case failed(any Error)
        /// Run the next statement: this caller's key and these waiters'.
        case lead([Waiter])
    }

    private struct State {
        var waiting = Deque<Waiter>()
        var running = 0
        /// The most statements ever in flight at once, and statements and keys so far (tests).
        var mostRunning = 0
        var statements = 0
        var keys = 0
    }

    private let pool: PostgresConnectionPool
    private let state = Mutex(State())
    private let keysLookedUp = Counter(label: "locgate_key_lookups_total")

    init(pool: PostgresConnectionPool, maxInFlight: Int) {
        self.pool = pool
        self.maxInFlight = max(1, maxInFlight)
    }

    /// By default a quarter of the pool, between 1 and 4 connections.
    static func defaultMaxInFlight(poolSize: Int) -> Int {
        min(4, max(1, poolSize / 4))
    }

    /// Callers waiting for a statement now.
    var waiting: Int { state.withLock { $0.waiting.count } }

    /// What the look-ups cost so far: statements run, keys they checked, and the most that
    /// ran at once.
    var cost: (statements: Int, keys: Int, mostInFlight: Int) {
        state.withLock { ($0.statements, $0.keys, $0.mostRunning) }
    }

    /// The live key whose SHA-256 is `digest`, or nil.
    func identity(digest: String) async throws -> APIIdentity? {
        let wake = await withCheckedContinuation { (continuation: CheckedContinuation<Wake, Never>) in
            let lead = state.withLock { state -> Bool in
                if state.running < maxInFlight, state.waiting.isEmpty {
                    state.running += 1
                    state.mostRunning = max(state.mostRunning, state.running)
                    return true
                }
                state.waiting.append(Waiter(digest: digest, continuation: continuation))
                return false
            }
            if lead { continuation.resume(returning: .lead([])) }
        }
        switch wake {
        case .answered(let identity):
            return identity
        case .failed(let error):
            throw error
        case .lead(let others):
            let result: Result<[String: APIIdentity], any Error>
            do {
                result = .success(try await look(up: Set([digest] + others.map(\.digest))))
            } catch {
                result = .failure(error)
            }
            handOver()
            for waiter in others {
                switch result {
                case .success(let found): waiter.continuation.resume(returning: .answered(found[waiter.digest]))
                case .failure(let error): waiter.continuation.resume(returning: .failed(error))
                }
            }
            return try result.get()[digest]
        }
    }

    /// The statement is done: the first waiter leads the next one with up to `batchLimit - 1`
    /// others, or the slot is free again.
    private func handOver() {
        let next = state.withLock { state -> (Waiter, [Waiter])? in
            guard let first = state.waiting.popFirst() else {
                state.running -= 1
                return nil
            }
            var others: [Waiter] = []
            while others.count < Self.batchLimit - 1, let waiter = state.waiting.popFirst() { others.append(waiter) }
            return (first, others)
        }
        if let next { next.0.continuation.resume(returning: .lead(next.1)) }
    }

    /// One statement for a set of digests.
    private func look(up digests: Set<String>) async throws -> [String: APIIdentity] {
        state.withLock { state in
            state.statements += 1
            state.keys += digests.count
        }
        keysLookedUp.increment(by: digests.count)
        let list = Array(digests)
        return try await pool.withConnection { connection -> [String: APIIdentity] in
            var found: [String: APIIdentity] = [:]
            for row in try connection.query(
                """
                SELECT key_hash, id, app_id, scope, token_secret FROM api_keys
                WHERE key_hash = ANY(\(PostgresArray(list))) AND revoked_at IS NULL
                """) {
                guard let scope = KeyScope(rawValue: try row.decode(3)) else { continue }
                let hash: String = try row.decode(0)
                found[hash] = APIIdentity(
                    keyID: try row.decode(1), appID: try row.decode(2), scope: scope,
                    tokenSecret: try row.decodeIfPresent(4, as: String.self))
            }
            return found
        }
    }
}
