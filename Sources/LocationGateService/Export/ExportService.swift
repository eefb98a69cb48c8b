import Foundation

/// The export face of the service (SPEC §13, "Access and portability"): everything held of a
/// person, written a page at a time (`UserExport`).
public protocol ExportService: Sendable {
    /// Starts a person's export, reading their first page of devices (an error here is an error
    /// status, before anything is written).
    func beginExport(appID: UUID, userID: String, now: Date) async throws(ServiceError) -> UserExport
    /// Writes the export's JSON through `write`, a piece at a time.
    func writeExport(_ export: UserExport, to write: ([UInt8]) async throws -> Void) async throws
    /// A place for one export of the app while it streams: at most two at once (429 beyond).
    func admitExport(appID: UUID) throws(ServiceError) -> CostlyPermit
}

extension ExportCapability: ExportService {
    public func admitExport(appID: UUID) throws(ServiceError) -> CostlyPermit {
        try costly.admit(.export, appID: appID)
    }
}
