import Foundation
import LocationAuthorization
import LocationGateClient
import LocationGateTestKit

enum ClientFixtures {
    /// Whole seconds, so that a time compares equal after its RFC 3339 round trip.
    static let time = Date(timeIntervalSince1970: 1_795_000_000)

    /// A submission for `device` that the reducer always accepts.
    static func submission(_ number: Int, device: String = "d-1") -> EventSubmission {
        EventSubmission(
            id: UUID(), userId: "u-1", deviceId: device, occurredAt: time.addingTimeInterval(Double(number)),
            event: number % 2 == 0 ? .appStateChanged(.foreground, backgroundIndicator: false) : .appStateChanged(.background, backgroundIndicator: false))
    }

    /// Opens a queue and appends `count` submissions; returns them as stored.
    static func filledQueue(_ directory: TemporaryDirectory, count: Int, compactionThreshold: Int = EventQueue.defaultCompactionThreshold) throws -> (EventQueue, [EventSubmission]) {
        let queue = try EventQueue(directory: directory.url, compactionThreshold: compactionThreshold)
        var stored: [EventSubmission] = []
        for number in 0..<count {
            stored.append(try queue.append(submission(number)))
        }
        return (queue, stored)
    }
}
