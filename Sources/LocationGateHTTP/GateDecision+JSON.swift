import Foundation
import LocationAuthorization

/// Gate decisions written by hand: the gate is the hot path, and Foundation's JSONEncoder costs
/// more than everything else a cached gate does. The output is the same JSON (keys sorted) that
/// the Codable form gives; `GateDecisionJSONTests` checks that.
extension GateDecision {
    func appendJSON(to out: inout [UInt8]) {
        func key(_ name: StaticString) {
            out.append(UInt8(ascii: "\""))
            name.withUTF8Buffer { out.append(contentsOf: $0) }
            out.append(contentsOf: [UInt8(ascii: "\""), UInt8(ascii: ":")])
        }
        func string(_ text: String) {
            out.append(UInt8(ascii: "\""))
            for byte in text.utf8 {
                switch byte {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"):
                    out.append(UInt8(ascii: "\\"))
                    out.append(byte)
                case 0..<0x20:
                    out.append(contentsOf: Array(String(format: "\\u%04x", byte).utf8))
                default:
                    out.append(byte)
                }
            }
            out.append(UInt8(ascii: "\""))
        }
        func bool(_ value: Bool) { out.append(contentsOf: Array((value ? "true" : "false").utf8)) }
        func comma() { out.append(UInt8(ascii: ",")) }
        out.append(UInt8(ascii: "{"))
        key("accuracy"); string(accuracy.rawValue); comma()
        key("action"); string(action.rawValue); comma()
        key("enabled"); bool(enabled); comma()
        key("feature"); string(feature); comma()
        if let missingKeys {
            key("missingKeys")
            out.append(UInt8(ascii: "["))
            for (index, name) in missingKeys.enumerated() {
                if index > 0 { comma() }
                string(name)
            }
            out.append(UInt8(ascii: "]"))
            comma()
        }
        key("provisional"); bool(provisional); comma()
        key("reason"); string(reason.rawValue); comma()
        key("requiredTier"); string(requiredTier.rawValue); comma()
        key("status"); string(status.rawValue); comma()
        key("temporary"); bool(temporary); comma()
        key("version"); out.append(contentsOf: Array(String(version).utf8))
        out.append(UInt8(ascii: "}"))
    }

    var jsonData: Data {
        var out: [UInt8] = []
        out.reserveCapacity(256)
        appendJSON(to: &out)
        return Data(out)
    }
}
