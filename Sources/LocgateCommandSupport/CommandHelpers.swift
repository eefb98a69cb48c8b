import ArgumentParser
import Foundation
import LocationGateService
import Logging
import PostgresClient

/// Logging for a command: swift-log to standard error at the chosen level, bootstrapped once.
package enum CommandLogging {
    package static func bootstrap(level: Logger.Level) {
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
    }
}

/// Prints a value as JSON on standard output.
package func printJSON(_ value: some Encodable) throws {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
    FileHandle.standardOutput.write(try encoder.encode(value) + Data("\n".utf8))
}

/// Runs `body` with a pool on the configured database, logging bootstrapped, database errors
/// shown in detail, and the pool closed whatever happens.
package func withPool<T>(
    _ database: DatabaseOptions, size: Int = 2, label: String = "locgate",
    _ body: (PostgresConnectionPool, Logger) async throws -> T
) async throws -> T {
    CommandLogging.bootstrap(level: database.level)
    let logger = Logger(label: label)
    let pool = try database.makePool(size: size, logger: logger)
    do {
        let value = try await CommandFailure.reporting { try await body(pool, logger) }
        await pool.close()
        return value
    } catch {
        await pool.close()
        throw error
    }
}

/// Runs `body` with a gating service on the configured database.
package func withService<T>(_ database: DatabaseOptions, poolSize: Int = 2, _ body: (GateService) async throws -> T) async throws -> T {
    try await withPool(database, size: poolSize) { pool, logger in
        let readPool = database.makeReadPool(size: poolSize, logger: logger)
        do {
            let value = try await body(GateService(pool: pool, logger: logger, readPool: readPool))
            await readPool?.close()
            return value
        } catch {
            await readPool?.close()
            throw error
        }
    }
}

/// SPEC §14 "Guard rails": a command given an app id that does not exist stops there, non-zero,
/// with "no such app" and what it therefore did not do, before it reads or writes anything for
/// the app (an export must never look like "we hold nothing about you"; the log's tables take
/// their app on trust).
package func requireApp(_ appID: UUID, in service: GateService, _ consequence: String = "nothing was done") async throws {
    guard try await service.catalog.appName(appID: appID) != nil else {
        throw CommandFailure(description: "no such app \(appID.uuidString.lowercased()): \(consequence)")
    }
}

extension Duration {
    /// The duration in seconds, for reports.
    package var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}
