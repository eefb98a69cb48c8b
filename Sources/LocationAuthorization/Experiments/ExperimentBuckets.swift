import Foundation

/// Which variant a unit is assigned (SPEC §16 "Assignment"): the unit's bucket is the first 8
/// bytes of the SHA-256 of the UTF-8 text `APPID:KEY:UNIT`, read as an unsigned big-endian
/// integer, modulo 10,000; the variants, in their listed order, take consecutive ranges of
/// `weight × 100` buckets, and the range holding the bucket names the variant.
///
/// A hash of public text rather than a random draw, so that anyone can recompute an assignment
/// (`printf %s 'APPID:KEY:UNIT' | sha256sum`, docs/experiments.md) and an edge or an SDK can
/// make the same one without asking; the experiment's key is in the text so that one device's
/// buckets in two experiments are independent. Modulo 10,000 of a 64-bit number is uniform to
/// within 10,000/2⁶⁴, far below anything an experiment can measure.
///
/// The assignment is made once, at the exposure, and kept (sticky): a later change of weights
/// moves no exposed device.
public struct ExperimentBuckets: Sendable {
    /// How many buckets there are: a weight of 1% is 100 of them.
    public static let count = 10_000

    /// The hash of `APPID:KEY:`, every unit's text is added to a copy of it.
    private let prefix: SHA256Hasher
    private let variants: [ExperimentVariant]

    /// The buckets of `definition` in the app `appID`, written as the API writes it (lower
    /// case, `uuidString.lowercased()`).
    public init(appID: UUID, definition: ExperimentDefinition) {
        self.init(appIDText: appID.uuidString.lowercased(), key: definition.key, variants: definition.variants)
    }

    /// The buckets of an experiment `key` with `variants` in the app whose id's text is
    /// `appIDText`, exactly as given.
    public init(appIDText: String, key: String, variants: [ExperimentVariant]) {
        var prefix = SHA256Hasher()
        prefix.update(appIDText.utf8)
        prefix.update(CollectionOfOne(UInt8(ascii: ":")))
        prefix.update(key.utf8)
        prefix.update(CollectionOfOne(UInt8(ascii: ":")))
        self.prefix = prefix
        self.variants = variants
    }

    /// The unit's bucket, 0 to 9,999.
    public func bucket(of unit: ExperimentUnit) -> Int {
        var hasher = prefix
        hasher.update(unit.text.utf8)
        return Self.bucket(ofDigest: hasher.finalize())
    }

    /// The variant the unit is assigned at its exposure.
    public func variant(for unit: ExperimentUnit) -> String {
        Self.variant(inBucket: bucket(of: unit), of: variants)
    }

    /// A digest's bucket: its first 8 bytes, big-endian, modulo 10,000.
    public static func bucket(ofDigest digest: [UInt8]) -> Int {
        var value: UInt64 = 0
        for byte in digest.prefix(8) { value = value << 8 | UInt64(byte) }
        return Int(value % UInt64(Self.count))
    }

    /// The variant whose range holds `bucket`: the first variant's range is
    /// 0 ..< weight₁ × 100, the next one's starts where it ends, and so on. A variant of
    /// weight 0 has an empty range. Weights that do not sum to 100 (never, for a checked
    /// definition) leave the buckets past their sum to the last variant with a weight.
    public static func variant(inBucket bucket: Int, of variants: [ExperimentVariant]) -> String {
        var end = 0
        for variant in variants {
            end += variant.weight * (Self.count / ExperimentDefinition.totalWeight)
            if bucket < end { return variant.key }
        }
        return variants.last(where: { $0.weight > 0 })?.key ?? variants.first?.key ?? ""
    }
}
