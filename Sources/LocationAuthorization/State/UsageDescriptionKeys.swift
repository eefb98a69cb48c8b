/// The Info.plist keys Core Location checks before it shows a prompt (SPEC §3 K1-K3).
///
/// 000 asks for NSLocationAlwaysUsageDescription and 003 for
/// NSLocationAlwaysAndWhenInUseUsageDescription (iOS 11+); either satisfies K2 on iOS 11 and
/// later, and where a missing key is named, the current one is.
public enum UsageDescriptionKey {
    public static let whenInUse = "NSLocationWhenInUseUsageDescription"
    public static let alwaysAndWhenInUse = "NSLocationAlwaysAndWhenInUseUsageDescription"
    public static let always = "NSLocationAlwaysUsageDescription"
    /// The macOS key from before When In Use existed there.
    public static let legacyMac = "NSLocationUsageDescription"
    /// Not a usage description: the Info.plist key whose `location` mode V5 needs, named by
    /// `failed(missingBackgroundMode)` and the `fixBackgroundModes` action.
    public static let backgroundModes = "UIBackgroundModes"

    /// Every key the product knows; an unknown context is taken to declare all of them.
    public static let all: [String] = [whenInUse, alwaysAndWhenInUse, always, legacyMac]

    /// K1: the keys a When In Use request lacks. On macOS either NSLocationUsageDescription or
    /// NSLocationWhenInUseUsageDescription will do; the current one is named when both are missing.
    public static func missingForWhenInUse(in context: DeviceContext) -> [String] {
        if context.effectivePlatform == .macOS {
            return context.declares(legacyMac) || context.declares(whenInUse) ? [] : [whenInUse]
        }
        return context.declares(whenInUse) ? [] : [whenInUse]
    }

    /// K2: the keys an Always request lacks. iOS 11 and later (and every other platform, whose
    /// versions all postdate iOS 11) need the When In Use key and one of the two Always keys;
    /// iOS/iPadOS below 11 need NSLocationAlwaysUsageDescription; macOS is as K1.
    public static func missingForAlways(in context: DeviceContext) -> [String] {
        if context.effectivePlatform == .macOS {
            return missingForWhenInUse(in: context)
        }
        if context.isIOSFamily(below: OSVersion(11)) {
            return context.declares(always) ? [] : [always]
        }
        var missing: [String] = []
        if !context.declares(whenInUse) { missing.append(whenInUse) }
        if !context.declares(alwaysAndWhenInUse) && !context.declares(always) {
            missing.append(alwaysAndWhenInUse)
        }
        return missing
    }
}
