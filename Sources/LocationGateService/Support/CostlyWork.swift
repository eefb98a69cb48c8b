import Foundation
import Synchronization

/// The requests that cost the database more than a gate does, bounded per app and in all
/// (SPEC §5 "Resources", §15): an app runs at most `perApp` of each kind at once on a server,
/// and beyond that gets 429 `rateLimited` at once (never queued behind its own work); the
/// admitted ones together hold at most a share of the database connections (`share`, served
/// one app at a time in turn, as the push streams' reads are), so that another app's gates,
/// ingest and history keep the rest of the pool.
public final class CostlyWork: Sendable {
    /// The kinds counted apart: two previews do not stop an export.
    public enum Kind: String, Sendable, Hashable, CaseIterable {
        case preview
        case export
        case analytics
    }

    /// Each app's requests of one kind at once, at most.
    public static let perApp = 2

    private struct Running: Hashable {
        var appID: UUID
        var kind: Kind
    }

    /// The connections costly requests read with at once, all apps together.
    let share: StreamReads
    private let running = Mutex<[Running: Int]>([:])

    /// - Parameter connections: the costly requests' share of the pool (a quarter, at least one).
    public init(connections: Int) {
        self.share = StreamReads(limit: connections)
    }

    /// Runs `body` for the app, once one of the share's connections is free; 429 `rateLimited`
    /// at once when the app runs `perApp` of `kind` already.
    func run<T>(_ kind: Kind, appID: UUID, _ body: () async throws -> T) async throws -> T {
        let permit = try admit(kind, appID: appID)
        defer { permit.release() }
        return try await share.run(appID: appID, body)
    }

    /// Counts in one request of `kind` for the app that runs longer than one call (an export,
    /// streamed as it is read), or throws 429 `rateLimited` as `run` does. The place is given
    /// back when the permit is released or freed.
    public func admit(_ kind: Kind, appID: UUID) throws(ServiceError) -> CostlyPermit {
        let key = Running(appID: appID, kind: kind)
        let admitted = running.withLock { running -> Bool in
            guard running[key, default: 0] < Self.perApp else { return false }
            running[key, default: 0] += 1
            return true
        }
        guard admitted else {
            throw ServiceError(
                .rateLimited, "this app runs \(Self.perApp) \(kind.rawValue) requests at once already; retry when one is done")
        }
        return CostlyPermit { [self] in
            running.withLock { running in
                let left = running[key, default: 1] - 1
                running[key] = left > 0 ? left : nil
            }
        }
    }

    /// Requests of each kind running now, all apps together (tests, metrics).
    public func count(_ kind: Kind) -> Int {
        running.withLock { running in running.filter { $0.key.kind == kind }.values.reduce(0, +) }
    }
}

/// One admitted costly request's place, given back once: by `release()` or when freed.
public final class CostlyPermit: Sendable {
    private let giveBack: Mutex<(@Sendable () -> Void)?>

    init(_ giveBack: @escaping @Sendable () -> Void) {
        self.giveBack = Mutex(giveBack)
    }

    public func release() {
        let action = giveBack.withLock { action -> (@Sendable () -> Void)? in
            defer { action = nil }
            return action
        }
        action?()
    }

    deinit { release() }
}

/// Set when the request a long read serves is gone (its client closed the connection) or its
/// task was cancelled: the read checks it between its pages and stops, ending its transaction
/// (SPEC §5: work whose client is gone is cancelled within a second).
public final class CancellationFlag: Sendable {
    private let flag = Atomic<Bool>(false)

    public init() {}

    public func cancel() { flag.store(true, ordering: .relaxed) }

    public var isCancelled: Bool { flag.load(ordering: .relaxed) }

    /// Throws `CancellationError` once cancelled.
    public func check() throws {
        if isCancelled { throw CancellationError() }
    }
}
