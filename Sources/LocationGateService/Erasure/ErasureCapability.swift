import Foundation
import Logging
import Metrics
import PostgresClient

/// Erasure (SPEC §13): a person's or a device's erasure recorded and answered at once, then
/// done in pages by whichever process picks it up (`ErasureStep.swift`), and completed once
/// every live server has forgotten what it held in memory (`Erasures.swift`). The HTTP layer
/// sees it as `ErasureService`; `ErasureWorker` runs its steps.
public final class ErasureCapability: Sendable, DatabaseCalls {
    let pool: PostgresConnectionPool
    let cache: DeviceStateCache
    let hub: ChangeHub
    /// Exposures remembered per device (SPEC §16): an erased device's are forgotten.
    let exposures: ExposureMemory
    let logger: Logger
    /// This process among the servers of the database (`server_processes`): erasures are done
    /// once every live one has acknowledged them.
    let processID = UUID()
    /// A process with a `CacheFollower` shares its database with others: it registers in
    /// `server_processes`, and erasures wait for its acknowledgement.
    let followsChanges: Bool
    /// Wakes the erasure worker (`ErasureWorker`).
    let erasureSignal = ErasureSignal()
    /// How erasures are paged, bounded and retried (`erasureSettings`), and their metrics.
    let erasureRuntime = ErasureRuntime()
    let erasuresPerformed = Counter(label: "locgate_erasures_performed_total")

    init(
        pool: PostgresConnectionPool, cache: DeviceStateCache, hub: ChangeHub, exposures: ExposureMemory, followsChanges: Bool,
        logger: Logger
    ) {
        self.pool = pool
        self.cache = cache
        self.hub = hub
        self.exposures = exposures
        self.followsChanges = followsChanges
        self.logger = logger
    }

    public static let erasureChannel = "locgate_erasures"

    /// How erasures are paged, bounded and retried; changeable while the service runs.
    public var erasureSettings: ErasureSettings {
        get { erasureRuntime.settings }
        set { erasureRuntime.settings = newValue }
    }
}
