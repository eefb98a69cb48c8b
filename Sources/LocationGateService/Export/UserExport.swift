import EventLog
import Foundation
import LocationAuthorization
import LocationGateJSON
import PostgresClient
import Synchronization

/// A person's export (SPEC §13, "Access and portability"; GDPR Art. 15 and 20):
/// `GET /v1/users/{u}/export` and `locgate export` write
/// `{"devices": [{"decisions", "deviceId", "experiments", "history", "state"}], "exportedAt",
/// "userId"}`, every key in byte order as in the API's other bodies. A device's `state` and
/// `decisions` are its current ones (as `.../state` shows them), its `experiments` its exposures
/// (SPEC §16: `[{"experiment", "exposedAt", "variant"}]`, by experiment key), and its `history`
/// holds every one of its events still in the log up to that state, in version order, each
/// entry as `.../history` writes it.
///
/// Memory stays bounded whatever the person's size: the devices are read `pageSize` at a time,
/// each device's history `pageSize` events at a time, and each page is written out before the
/// next is read, so that the export holds one page of events and one device's state at most.
/// Each device is consistent in itself (its history stops at the version of the state it
/// shows); devices are read one after the other, not as of one instant.
public struct UserExport: Sendable {
    /// Devices, and a device's events, read per statement.
    public static let defaultPageSize = 500

    public let appID: UUID
    public let userID: String
    public let exportedAt: Date
    let pageSize: Int
    /// The person's first page of devices, read before anything is written: a database that
    /// cannot answer is an error status, not a body cut short.
    let firstDevices: [String]
}

/// A person's export (SPEC §13, "Access and portability"): everything held of them, written a
/// page at a time. The HTTP layer sees it as `ExportService`.
public final class ExportCapability: Sendable, DatabaseCalls {
    let pool: PostgresConnectionPool
    let log: EventLog
    let gateStore: GateStore
    let features: FeatureCatalog
    let costly: CostlyWork
    private let pageSize = Mutex(UserExport.defaultPageSize)

    init(pool: PostgresConnectionPool, log: EventLog, gateStore: GateStore, features: FeatureCatalog, costly: CostlyWork) {
        self.pool = pool
        self.log = log
        self.gateStore = gateStore
        self.features = features
        self.costly = costly
    }

    /// Devices, and events of a device's history, an export reads per statement (and holds at
    /// once); `UserExport.defaultPageSize` unless lowered (tests check that pages change nothing).
    public var exportPageSize: Int {
        get { pageSize.withLock { $0 } }
        set { pageSize.withLock { $0 = newValue } }
    }

    /// Starts a person's export: reads their first page of devices. An unknown user has none,
    /// and is exported as `"devices": []`.
    public func beginExport(appID: UUID, userID: String, now: Date = Date()) async throws(ServiceError) -> UserExport {
        let pageSize = max(1, exportPageSize)
        let devices = try await database {
            try await pool.withConnection { connection in
                try EventLog.devices(ofUser: userID, appID: appID, limit: pageSize, on: connection)
            }
        }
        return UserExport(appID: appID, userID: userID, exportedAt: now, pageSize: pageSize, firstDevices: devices)
    }

    /// Writes the export's JSON through `write`, a piece at a time (at most one page of history
    /// per piece). Errors of the database are `ServiceError`s; those of `write` come through as
    /// they are.
    public func writeExport(_ export: UserExport, to write: ([UInt8]) async throws -> Void) async throws {
        let features = try await self.features.catalog(export.appID)
        try await write(Array(#"{"devices":["#.utf8))
        var devices = export.firstDevices
        var first = true
        while !devices.isEmpty {
            let keys = devices.map { StreamKey(appID: export.appID, userID: export.userID, deviceID: $0) }
            let rows = try await database { try await gateStore.devices(appID: export.appID, keys: keys) }
            for key in keys {
                let row = rows[key]
                try await writeDevice(
                    key, version: row?.version ?? 0, state: row?.state ?? DeviceState(), features: features,
                    pageSize: export.pageSize, first: first, to: write)
                first = false
            }
            guard devices.count == export.pageSize, let last = devices.last else { break }
            devices = try await database {
                try await pool.withConnection { connection in
                    try EventLog.devices(ofUser: export.userID, appID: export.appID, after: last, limit: export.pageSize, on: connection)
                }
            }
        }
        var tail = JSONWriter(capacity: 256)
        tail.field("exportedAt", RFC3339.string(from: export.exportedAt))
        tail.field("userId", export.userID)
        // The writer began a new object for these fields: it wrote them without a comma first.
        try await write(Array("],".utf8) + tail.bytes + [UInt8(ascii: "}")])
    }

    /// One device: `{"decisions", "deviceId", "experiments", "history", "state"}`, its history
    /// read a page at a time up to `version`, the version of the state shown.
    private func writeDevice(
        _ key: StreamKey, version: Int64, state: DeviceState, features: [Feature], pageSize: Int, first: Bool,
        to write: ([UInt8]) async throws -> Void
    ) async throws {
        let decisions = features.map { state.decide($0, version: version) }
        let exposures = try await database {
            try await pool.withConnection { connection in try ExperimentExposures.listed(key, on: connection) }
        }
        var head: [UInt8] = first ? [] : [UInt8(ascii: ",")]
        head += Array(#"{"decisions":"#.utf8)
        head += Array(try JSONText.encode(decisions).utf8)
        var id = JSONWriter(capacity: 160)
        id.string(key.deviceID)
        head += Array(#","deviceId":"#.utf8) + id.bytes
        head += Array(#","experiments":"#.utf8) + Array(try JSONText.encode(exposures).utf8) + Array(#","history":["#.utf8)
        try await write(head)

        var after: Int64 = 0
        var written = false
        while after < version {
            let from = after
            let page = try await database { try await log.readStream(key, afterVersion: from, limit: pageSize) }
            var piece = JSONWriter(capacity: page.count * 384)
            for recorded in page where recorded.version <= version {
                try HistoryPage.Entry(recorded).write(to: &piece)
            }
            if !piece.bytes.isEmpty {
                try await write((written ? [UInt8(ascii: ",")] : []) + piece.bytes)
                written = true
            }
            guard page.count == pageSize, let last = page.last, last.version < version else { break }
            after = last.version
        }
        try await write(Array(#"],"state":"#.utf8) + Array(try JSONText.encode(state).utf8) + [UInt8(ascii: "}")])
    }

    /// Writes a person's export to a new file at `path`, created owner-only (mode 0600) from
    /// the start and named only once complete and synced (`ArchiveWriter`): an existing file
    /// or symlink at `path` is refused, never replaced or followed.
    public func writeExport(_ export: UserExport, toFile path: String) async throws {
        let file = try ArchiveWriter(path: path)
        do {
            try await writeExport(export) { bytes in try file.write(bytes) }
            _ = try file.finish()
        } catch {
            file.abandon()
            throw error
        }
    }
}
