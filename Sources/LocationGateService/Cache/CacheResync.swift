import Logging
import Metrics

/// What a server does each time its LISTEN connection is (re)established: from then on every
/// change is notified, but what changed before is unknown, so every cache is emptied and every
/// load in flight voided (their epochs move), the push streams are told to read everything
/// again, the erasure worker looks for work, and the process records that it has forgotten
/// every erasure so far (phase 2 of erasure counts it as an acknowledgement).
struct CacheResync: Sendable {
    let service: GateService
    let logger: Logger
    private let resyncs = Counter(label: "locgate_cache_resyncs_total")

    init(service: GateService, logger: Logger) {
        self.service = service
        self.logger = logger
    }

    func run() {
        resyncs.increment()
        service.cache.removeAll()
        service.features.invalidateAll()
        service.keys.invalidateAll()
        service.hub.publishResync()
        service.erasure.erasureSignal.raise()
        let service = self.service
        let logger = self.logger
        Task {
            do { try await service.erasure.heartbeat(resynced: true) } catch {
                logger.warning("could not record the cache resync", metadata: ["error": "\(String(reflecting: error))"])
            }
        }
    }
}
