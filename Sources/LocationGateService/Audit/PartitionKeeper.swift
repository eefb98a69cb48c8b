import EventLog
import Logging
import PostgresClient
import ServiceLifecycle

/// Keeps a whole empty partition of the log ahead of the appends (docs/operations.md, "The
/// partitioned log"): every server runs one, once a minute. With the default ten million
/// positions per partition, the log would have to take ten million events within a minute to
/// reach a position without a partition; an append that does anyway creates them itself.
public struct PartitionKeeper: Service {
    let pool: PostgresConnectionPool
    let interval: Duration
    let logger: Logger

    public init(pool: PostgresConnectionPool, interval: Duration = .seconds(60), logger: Logger) {
        self.pool = pool
        self.interval = interval
        self.logger = logger
    }

    public func run() async throws {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                do {
                    let created = try await EventLog(pool: pool, logger: logger).ensurePartitions()
                    if !created.isEmpty { logger.info("created log partitions", metadata: ["partitions": "\(created)"]) }
                } catch where Task.isCancelled {
                    break
                } catch {
                    logger.warning("could not create log partitions; retrying", metadata: ["error": "\(String(reflecting: error))"])
                }
                try? await Task.sleep(for: interval)
            }
        }
    }
}
