import EventLog
import Foundation
import LocationAuthorization

/// The gates face of the service: decisions from memory for a device, a user or many devices
/// (SPEC §5). A feature the app does not have is `notFound`.
public protocol GateReading: Sendable {
    /// Every feature's decision for one device, with the device's status.
    func deviceGates(_ key: StreamKey) async throws(ServiceError) -> DeviceGates
    /// One feature's decision for one device.
    func deviceGate(_ key: StreamKey, feature: String) async throws(ServiceError) -> GateDecision
    /// The same answered from memory without awaiting, when the app's catalog and the device
    /// are cached (the usual case); nil when `deviceGate` must load one of them. A handler
    /// tries it first: an await of a call that would not suspend still costs its frame.
    func cachedDeviceGate(_ key: StreamKey, feature: String) throws(ServiceError) -> GateDecision?
    /// Every feature for a user: enabled when any device enables it, with each device's verdict.
    func userGates(appID: UUID, userID: String) async throws(ServiceError) -> UserGates
    /// `POST /v1/gates/query`: many devices at once, every feature or the ones named.
    func query(
        appID: UUID, devices: [(userID: String, deviceID: String)], featureKeys: [String]?
    ) async throws(ServiceError) -> [DeviceDecisions]
}

extension GateReading {
    /// Nothing is answered without awaiting unless the conformer says so.
    public func cachedDeviceGate(_ key: StreamKey, feature: String) throws(ServiceError) -> GateDecision? { nil }
}

extension GatesCapability: GateReading {}
