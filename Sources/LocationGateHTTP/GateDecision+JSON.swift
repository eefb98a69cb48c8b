import Foundation
import LocationAuthorization
import LocationGateJSON

/// Gate decisions written by hand: the gate is the hot path, and Foundation's JSONEncoder costs
/// more than everything else a cached gate does. The output is the same JSON (keys sorted) that
/// the Codable form gives; `GateDecisionJSONTests` checks that.
extension GateDecision {
    func write(to writer: inout JSONWriter) {
        writer.objectStart()
        writer.field("accuracy", accuracy)
        writer.field("action", action)
        writer.field("enabled", enabled)
        writer.field("feature", feature)
        if let missingKeys { writer.field("missingKeys", strings: missingKeys) }
        writer.field("provisional", provisional)
        writer.field("reason", reason)
        writer.field("requiredTier", requiredTier)
        writer.field("status", status)
        writer.field("temporary", temporary)
        writer.field("version", Int(version))
        writer.objectEnd()
    }

    var json: [UInt8] {
        var writer = JSONWriter(capacity: 256)
        write(to: &writer)
        return writer.bytes
    }
}
