import Foundation
import LocationAuthorization
import Testing

/// openapi.yaml's lists of event types, decision reasons and actions against the domain's own
/// enumerations: a type, reason or action added to the domain and not to the document (or the
/// other way round) fails here, not in a client generated from the document.
@Suite("openapi.yaml's vocabularies equal the domain's")
struct OpenAPIVocabularyTests {
    /// Every inline `enum: [...]` list of the document, as sets of names.
    static func enumLists() throws -> [Set<String>] {
        let text = try RepositoryText.file("openapi.yaml")
        var lists: [Set<String>] = []
        var rest = text[...]
        while let start = rest.range(of: "enum: [") {
            guard let end = rest[start.upperBound...].firstIndex(of: "]") else { break }
            let names = rest[start.upperBound..<end]
                .split(separator: ",")
                .map { $0.trimmingCharacters(in: .whitespacesAndNewlines).trimmingCharacters(in: CharacterSet(charactersIn: "\"'")) }
                .filter { !$0.isEmpty }
            lists.append(Set(names))
            rest = rest[end...]
        }
        return lists
    }

    @Test("Each list of event types names exactly the domain's EventType cases")
    func eventTypes() throws {
        let expected = Set(EventType.allCases.map(\.rawValue))
        let lists = try Self.enumLists().filter { $0.contains("contextReported") && $0.contains("promptResponded") }
        #expect(!lists.isEmpty, "openapi.yaml lists no event types")
        for list in lists {
            #expect(list == expected, "missing \(expected.subtracting(list).sorted()), extra \(list.subtracting(expected).sorted())")
        }
    }

    @Test("Each list of decision reasons names exactly GateReason's cases (a preview's also unknownFeature)")
    func reasons() throws {
        let expected = Set(GateReason.allCases.map(\.rawValue))
        let lists = try Self.enumLists().filter { $0.contains("authorized") && $0.contains("awaitingResponse") }
        #expect(!lists.isEmpty, "openapi.yaml lists no decision reasons")
        for list in lists {
            #expect(list.subtracting(["unknownFeature"]) == expected,
                    "missing \(expected.subtracting(list).sorted()), extra \(list.subtracting(expected).sorted())")
        }
    }

    @Test("Each list of decision actions names exactly GateAction's cases")
    func actions() throws {
        let expected = Set(GateAction.allCases.map(\.rawValue))
        let lists = try Self.enumLists().filter { $0.contains("requestWhenInUse") && $0.contains("openSettings") }
        #expect(!lists.isEmpty, "openapi.yaml lists no decision actions")
        for list in lists {
            #expect(list == expected, "missing \(expected.subtracting(list).sorted()), extra \(list.subtracting(expected).sorted())")
        }
    }
}
