import EventLog
import Foundation
import LocationAuthorization
import Testing

@testable import LocationGateService

/// The memory the process really allocates, not what the cache counts: a million distinct
/// devices, each with a context of its own, pass through a cache with a 32 MiB budget.
/// `Deploy/test` runs this suite alone, so that no other test allocates meanwhile.
@Suite("Device cache memory under a million devices and contexts", .timeLimit(.minutes(5)))
struct CacheMemoryTests {
    #if os(Linux)
    /// The process's resident memory (`/proc/self/statm`): what the machine really gives it,
    /// allocator overhead and fragmentation included.
    static func heapInUse() -> Int {
        guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
        let fields = text.split(separator: " ")
        guard fields.count > 1, let pages = Int(fields[1]) else { return 0 }
        return pages * 4096
    }

    @Test("Resident memory grows by no more than the budget while 1,000,000 distinct devices and contexts pass through")
    func millionDevices() {
        let budget = 32 << 20
        let baseline = Self.heapInUse()
        let cache = DeviceStateCache(byteBudget: budget, coherence: CacheCoherence(alwaysFollowing: true))
        let appID = UUID()
        var peak = 0
        for index in 0..<1_000_000 {
            var state = DeviceState()
            state.authorization = .authorizedWhenInUse
            state.context = DeviceContext(platform: .iOS, osVersion: OSVersion(18, index % 10), appVersion: "build-\(index)-of-a-long-version")
            cache.store(
                StreamKey(appID: appID, userID: "user-\(index)-with-a-long-id", deviceID: "device-\(index)-with-a-long-id"),
                version: 1, state: state, resyncs: cache.resyncCount)
            if index % 10_000 == 9_999 { peak = max(peak, Self.heapInUse() - baseline) }
        }
        #expect(cache.bytes <= budget)
        #expect(cache.count > 10_000)
        // What the process holds for the cache stays within the budget, with a 25% allowance
        // for the allocator's own bookkeeping and fragmentation, which the count does not see.
        #expect(peak > 0 && peak <= budget + budget / 4, "peak resident growth \(peak) bytes for a budget of \(budget)")
    }
    #endif
}
