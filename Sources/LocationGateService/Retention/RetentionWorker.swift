import Foundation
import Logging
import ServiceLifecycle

/// Every server runs retention on a schedule: hourly by default (`locgate serve
/// --retention-interval`), sooner again when a run stopped at its time budget. One server runs
/// at a time across the cluster (the others find the run lock held and skip); every run logs
/// one line and counts its events (`Retention.run`).
public struct RetentionWorker: Service {
    let retention: Retention
    let logger: Logger
    let interval: Duration
    /// The clock a run measures ages against; tests move it.
    let now: @Sendable () -> Date

    public init(retention: Retention, logger: Logger, interval: Duration = .seconds(3600), now: @escaping @Sendable () -> Date = { Date() }) {
        self.retention = retention
        self.logger = logger
        self.interval = interval
        self.now = now
    }

    public func run() async throws {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                var wait = interval
                do {
                    let report = try await retention.run(now: now())
                    if report.unfinished { wait = min(interval, .seconds(60)) }
                } catch where Task.isCancelled {
                    break
                } catch {
                    logger.warning("retention run failed; the next one tries again", metadata: ["error": "\(String(reflecting: error))"])
                    wait = min(interval, .seconds(60))
                }
                try? await Task.sleep(for: wait)
            }
        }
    }
}
