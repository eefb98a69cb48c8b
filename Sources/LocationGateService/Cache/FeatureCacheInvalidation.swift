import Foundation

/// `locgate_features`: an app's catalog changed. Its cached catalog is dropped and the push
/// streams of the app are woken (an OFREP bulk evaluation may have changed); a payload that
/// names no app drops every catalog.
struct FeatureCacheInvalidation: Sendable {
    let features: FeatureCatalog
    let hub: ChangeHub

    func apply(_ payload: String) {
        if let appID = UUID(uuidString: payload) {
            features.invalidate(appID)
            hub.publishFeatures(appID: appID)
        } else {
            features.invalidateAll()
            hub.publishFeatures(appID: nil)
        }
    }
}
