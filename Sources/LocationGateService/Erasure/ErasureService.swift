import Foundation

/// The erasure face of the service (SPEC §13): erasing a person or one device of theirs, and
/// following an erasure. Each request is recorded in the admin audit trail, naming the
/// erasure, never the person.
public protocol ErasureService: Sendable {
    /// Records the erasure of a person and its work; the answer comes at once.
    func requestErasure(appID: UUID, userID: String, actor: AuditActor) async throws(ServiceError) -> ErasureRecord
    /// Records the erasure of one device of a person; the person's other devices stay.
    func requestDeviceErasure(
        appID: UUID, userID: String, deviceID: String, actor: AuditActor
    ) async throws(ServiceError) -> ErasureRecord
    /// The app's erasure with that id; nil when the app has none.
    func erasure(appID: UUID, id: UUID) async throws(ServiceError) -> ErasureRecord?
}

extension ErasureCapability: ErasureService {}
