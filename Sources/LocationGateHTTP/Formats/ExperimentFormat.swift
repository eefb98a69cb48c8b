import Foundation
import LocationAuthorization
import LocationGateService

/// An experiment's API forms beside the experiment's own (`Experiment`'s `Encodable`, SPEC
/// §16): its results as JSON or CSV, and one evaluation's answer. `GET
/// /v1/experiments/{key}/results` and `locgate experiments results` write the same bytes
/// through here; `locgate experiments put` checks its body's members as the API does.
public enum ExperimentFormat {
    /// The CSV columns of the results, in order: an interval is two columns, its low and high.
    public static let csvColumns = [
        "variant", "exposed", "answered", "granted", "grantRate", "ci95Low", "ci95High", "exposedGrantRate", "ci95ExposedLow",
        "ci95ExposedHigh", "uplift", "pValue",
    ]

    /// `{"experiment", "state", "variants": [...]}`, a row as `VariantResult` encodes it.
    public struct Results: Encodable, Sendable {
        public var experiment: String
        public var state: ExperimentState
        public var variants: [VariantResult]

        public init(_ results: ExperimentResults) {
            self.experiment = results.experiment
            self.state = results.state
            self.variants = results.variants
        }
    }

    /// `{"experiment", "variant", "reason", "exposedAt"}`, `exposedAt` an RFC 3339 time or
    /// null without an exposure.
    public struct Answer: Encodable, Sendable {
        public var answer: ExperimentAnswer

        public init(_ answer: ExperimentAnswer) {
            self.answer = answer
        }

        private enum CodingKeys: String, CodingKey {
            case experiment, variant, reason, exposedAt
        }

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(answer.experiment, forKey: .experiment)
            try container.encode(answer.variant, forKey: .variant)
            try container.encode(answer.reason, forKey: .reason)
            if let exposedAt = answer.exposedAt {
                try container.encode(RFC3339.string(from: exposedAt), forKey: .exposedAt)
            } else {
                try container.encodeNil(forKey: .exposedAt)
            }
        }
    }

    /// The results as CSV (SPEC §16, §6): a header row of `csvColumns`, one row per variant, the
    /// control first; an empty cell where the JSON has null. The variant's key is text, and so
    /// neutralised for spreadsheets (a key may start with `-`); the figures are numbers. Lines
    /// end with LF, as the analytics API's.
    public static func csv(_ results: ExperimentResults) -> String {
        let rows = results.variants.map { row -> [CSV.Field] in
            [
                .text(row.variant), .number(String(row.exposed)), .number(String(row.answered)), .number(String(row.granted)),
                number(row.grantRate), number(row.ci95?.low), number(row.ci95?.high), number(row.exposedGrantRate),
                number(row.ci95Exposed?.low), number(row.ci95Exposed?.high), number(row.uplift), number(row.pValue),
            ]
        }
        return CSV.write(header: csvColumns, rows: rows, lineEnding: .lf)
    }

    /// A rate or a p as the CSV writes it: whole numbers without a fraction (`1`, `0`), others as
    /// Swift writes a `Double` (the shortest text that reads back the same); empty for none.
    static func number(_ value: Double?) -> CSV.Field {
        guard let value else { return .number("") }
        if value.rounded() == value, abs(value) < 1e15 { return .number(String(Int64(value))) }
        return .number(String(value))
    }

    /// Checks the members of a `PUT /v1/experiments/{key}` body as the API does (SPEC §14): a
    /// member the body does not define, or a `null` where GET shows none, is a 422
    /// `validationFailed` naming it; an object naming a member twice is a 400. A body that is
    /// not JSON passes, for the definition's reader to refuse. The command line checks its
    /// bodies here, so that it refuses what the API refuses.
    public static func checkMembers(of body: Data) throws(ServiceError) {
        do throws(APIError) {
            try ConfigurationBody.checkMembers(of: body, shape: ConfigurationBody.experiment, refusingNulls: true)
        } catch {
            throw error.error
        }
    }
}
