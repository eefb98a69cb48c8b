import Foundation
import Testing

@testable import LocationGateService

/// SPEC §5 "Resources": an app runs at most two of each kind of costly request at once (429
/// beyond, at once, never queued), while other apps and other kinds go on.
@Suite("Costly work: two of a kind per app")
struct CostlyWorkTests {
    @Test("A third preview of one app is refused with rateLimited; another app's, and the same app's export, are not")
    func twoPerAppAndKind() async throws {
        let work = CostlyWork(connections: 4)
        let app = UUID(), other = UUID()
        let (gate, open) = AsyncStream<Void>.makeStream()
        let (started, didStart) = AsyncStream<Void>.makeStream()
        let held = (0..<2).map { _ in
            Task {
                try await work.run(.preview, appID: app) {
                    didStart.yield()
                    for await _ in gate {}
                }
            }
        }
        var starts = started.makeAsyncIterator()
        _ = await starts.next()
        _ = await starts.next()
        #expect(work.count(.preview) == 2)
        await #expect(throws: ServiceError.self) {
            try await work.run(.preview, appID: app) {}
        }
        do {
            try await work.run(.preview, appID: app) {}
        } catch let error as ServiceError {
            #expect(error.code == .rateLimited)
        }
        try await work.run(.preview, appID: other) {}
        let permit = try work.admit(.export, appID: app)
        permit.release()
        open.finish()
        for task in held { try await task.value }
        #expect(work.count(.preview) == 0)
        try await work.run(.preview, appID: app) {}
    }

    @Test("A permit's place is given back once, by release or when freed")
    func permitsGiveBack() throws {
        let work = CostlyWork(connections: 1)
        let app = UUID()
        var first: CostlyPermit? = try work.admit(.export, appID: app)
        let second = try work.admit(.export, appID: app)
        #expect(throws: ServiceError.self) { _ = try work.admit(.export, appID: app) }
        second.release()
        second.release()
        #expect(work.count(.export) == 1)
        first = nil
        #expect(first == nil)
        #expect(work.count(.export) == 0)
    }
}
