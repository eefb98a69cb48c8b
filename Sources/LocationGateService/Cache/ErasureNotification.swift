import Foundation
import Logging

/// `locgate_erasures`: work for the erasure worker (a request, `work`), or an erasure whose
/// phase 1 is done elsewhere (its id). The worker is woken either way; for a done phase 1 this
/// process forgets the erasure's devices and acknowledges it (phase 2), then wakes the worker
/// again, since the acknowledgement may have been the last one.
struct ErasureNotification: Sendable {
    let service: GateService
    let logger: Logger

    func apply(_ payload: String) {
        service.erasure.erasureSignal.raise()
        guard let id = UUID(uuidString: payload) else { return }
        let service = self.service
        let logger = self.logger
        Task {
            do {
                try await service.erasure.acknowledgeErasure(id)
                service.erasure.erasureSignal.raise()
            } catch {
                logger.warning("could not acknowledge an erasure", metadata: ["error": "\(String(reflecting: error))"])
            }
        }
    }
}
