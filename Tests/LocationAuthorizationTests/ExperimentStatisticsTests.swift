import Foundation
import LocationGateJSON
import Testing

@testable import LocationAuthorization

/// SPEC §16 "Results" and "Guard": Wilson's interval at z = 1.959964, the pooled two-proportion
/// z-test, the results' rows and their nulls, and the guard's decision.
///
/// Expected values: Newcombe (1998), Table I, for Wilson's interval of 81/263 (0.2553 to
/// 0.3662); the rest computed with Python's `math` (`math.erfc`, the same formulas written
/// independently) and hard-coded to 12 digits.
@Suite("Experiments: statistics, results and the guard", .timeLimit(.minutes(1)))
struct ExperimentStatisticsTests {
    func near(_ value: Double?, _ expected: Double, within tolerance: Double = 1e-12) -> Bool {
        guard let value else { return false }
        return abs(value - expected) <= tolerance
    }

    // MARK: Wilson's interval

    @Test("Wilson's interval of textbook cases")
    func wilson() throws {
        let cases: [(successes: Int, trials: Int, low: Double, high: Double)] = [
            (81, 263, 0.255288519489016, 0.366209577458019),
            (0, 10, 0.0, 0.277532803026058),
            (10, 10, 0.722467196973942, 1.0),
            (1, 1, 0.206549311791803, 1.0),
            (5, 100, 0.021543679017992, 0.111750469874105),
            (500, 1000, 0.469069600125063, 0.530930399874937),
        ]
        for example in cases {
            let interval = try #require(WilsonScoreInterval(successes: example.successes, trials: example.trials))
            #expect(near(interval.low, example.low), "\(example)")
            #expect(near(interval.high, example.high), "\(example)")
            #expect(interval.low >= 0 && interval.high <= 1)
            #expect(interval.bounds == [interval.low, interval.high])
        }
    }

    @Test("Newcombe's 81/263 to four places")
    func newcombe() throws {
        let interval = try #require(WilsonScoreInterval(successes: 81, trials: 263))
        #expect((interval.low * 10_000).rounded() == 2553)
        #expect((interval.high * 10_000).rounded() == 3662)
    }

    @Test("No interval at 0 trials, nor for counts no proportion has")
    func wilsonNil() {
        #expect(WilsonScoreInterval(successes: 0, trials: 0) == nil)
        #expect(WilsonScoreInterval(successes: 3, trials: 2) == nil)
        #expect(WilsonScoreInterval(successes: -1, trials: 2) == nil)
    }

    // MARK: The z-test

    @Test("The pooled two-proportion z-test")
    func zTest() throws {
        let cases: [(controlSuccesses: Int, controlTrials: Int, variantSuccesses: Int, variantTrials: Int, z: Double, p: Double)] = [
            (30, 100, 45, 100, 2.190890230020665, 0.02845973691631057),
            (550, 1000, 500, 1000, -2.238868314198227, 0.02516448570031841),
            (120, 400, 95, 400, -1.993828681848597, 0.04617077997251394),
            (300, 1000, 250, 1000, -2.503915429180671, 0.01228273897237741),
            (50, 100, 50, 100, 0.0, 1.0),
        ]
        for example in cases {
            let test = try #require(TwoProportionZTest(
                controlSuccesses: example.controlSuccesses, controlTrials: example.controlTrials,
                variantSuccesses: example.variantSuccesses, variantTrials: example.variantTrials))
            #expect(near(test.z, example.z), "\(example)")
            #expect(near(test.twoSidedP, example.p), "\(example)")
            // One-sided, variant lower: half the two-sided p in that direction, 1 minus it in the other.
            #expect(near(test.pVariantLower, example.z < 0 ? example.p / 2 : 1 - example.p / 2), "\(example)")
        }
    }

    @Test("No test where a side has no trials or the pooled rate is 0 or 1")
    func zTestNil() {
        #expect(TwoProportionZTest(controlSuccesses: 0, controlTrials: 0, variantSuccesses: 3, variantTrials: 10) == nil)
        #expect(TwoProportionZTest(controlSuccesses: 3, controlTrials: 10, variantSuccesses: 0, variantTrials: 0) == nil)
        #expect(TwoProportionZTest(controlSuccesses: 0, controlTrials: 10, variantSuccesses: 0, variantTrials: 20) == nil)
        #expect(TwoProportionZTest(controlSuccesses: 10, controlTrials: 10, variantSuccesses: 20, variantTrials: 20) == nil)
    }

    @Test("The normal distribution function from erfc")
    func normal() {
        #expect(StandardNormal.cdf(0) == 0.5)
        #expect(near(StandardNormal.cdf(-2.326347874040841), 0.01, within: 1e-15))
        #expect(near(StandardNormal.cdf(WilsonScoreInterval.z95), 0.975, within: 1e-7))
        // Far in the tail, where 1 − Φ(x) would round to 0: Φ(−10) ≈ 7.6199e-24.
        #expect(near(StandardNormal.cdf(-10) / 7.619853024160527e-24, 1, within: 1e-9))
    }

    // MARK: Results

    func threeVariants() throws -> ExperimentDefinition {
        try ExperimentDefinition(
            key: "onboarding-primer", prompt: .one(.whenInUse),
            variants: [
                ExperimentVariant(key: "primer", weight: 40), ExperimentVariant(key: "dialog", weight: 40),
                ExperimentVariant(key: "button", weight: 20),
            ],
            control: "dialog")
    }

    @Test("Rows: the control first, then the others as listed; nulls as SPEC §16 says")
    func rows() throws {
        let rows = VariantResult.rows(of: try threeVariants(), counts: [
            VariantCounts(variant: "primer", exposed: 1000, answered: 600, granted: 250),
            VariantCounts(variant: "dialog", exposed: 1000, answered: 800, granted: 300),
            VariantCounts(variant: "retired", exposed: 5, answered: 5, granted: 5),
        ])
        #expect(rows.map(\.variant) == ["dialog", "primer", "button"])

        let control = rows[0]
        #expect(control.exposed == 1000 && control.answered == 800 && control.granted == 300)
        #expect(control.grantRate == 0.375)
        #expect(control.exposedGrantRate == 0.3)
        #expect(control.ci95 == WilsonScoreInterval(successes: 300, trials: 800))
        #expect(control.ci95Exposed == WilsonScoreInterval(successes: 300, trials: 1000))
        #expect(control.uplift == nil && control.pValue == nil)

        let primer = rows[1]
        #expect(near(primer.grantRate, 250.0 / 600.0))
        #expect(primer.exposedGrantRate == 0.25)
        #expect(near(primer.uplift, -0.05))
        #expect(near(primer.pValue, 0.01228273897237741))

        // Exposed nothing: every rate, interval, uplift and p null; the counts zero.
        let button = rows[2]
        #expect(button.exposed == 0 && button.answered == 0 && button.granted == 0)
        #expect(button.grantRate == nil && button.ci95 == nil)
        #expect(button.exposedGrantRate == nil && button.ci95Exposed == nil)
        #expect(button.uplift == nil && button.pValue == nil)
    }

    @Test("Exposed but nothing answered: grantRate null, the exposed rate 0; a control that exposed nothing leaves uplift and p null")
    func partialNulls() throws {
        let rows = VariantResult.rows(of: try threeVariants(), counts: [
            VariantCounts(variant: "primer", exposed: 40, answered: 0, granted: 0),
            VariantCounts(variant: "button", exposed: 10, answered: 4, granted: 2),
        ])
        let primer = rows[1]
        #expect(primer.grantRate == nil && primer.ci95 == nil)
        #expect(primer.exposedGrantRate == 0)
        #expect(primer.ci95Exposed != nil)
        #expect(primer.uplift == nil && primer.pValue == nil)
        #expect(rows[0].exposedGrantRate == nil)
    }

    @Test("p is null when the pooled rate is 0 or 1")
    func pooledExtremes() throws {
        let none = VariantResult.rows(of: try threeVariants(), counts: [
            VariantCounts(variant: "dialog", exposed: 10, answered: 10, granted: 0),
            VariantCounts(variant: "primer", exposed: 10, answered: 10, granted: 0),
        ])
        #expect(none[1].uplift == 0)
        #expect(none[1].pValue == nil)
        let all = VariantResult.rows(of: try threeVariants(), counts: [
            VariantCounts(variant: "dialog", exposed: 10, answered: 10, granted: 10),
            VariantCounts(variant: "primer", exposed: 10, answered: 10, granted: 10),
        ])
        #expect(all[1].pValue == nil)
    }

    @Test("A row's API form: every field present, null where there is no value, intervals as [low, high]")
    func rowJSON() throws {
        let rows = VariantResult.rows(of: try threeVariants(), counts: [
            VariantCounts(variant: "dialog", exposed: 1000, answered: 800, granted: 300),
        ])
        let controlJSON = try JSONEncoder().encode(rows[0])
        let control = try #require(JSONNode.parse(bytes: Array(controlJSON)))
        #expect(control["variant"]?.string == "dialog")
        #expect(control["exposed"]?.number == 1000)
        #expect(control["ci95"]?.array?.count == 2)
        #expect(control["uplift"]?.isNull == true)
        #expect(control["pValue"]?.isNull == true)
        let emptyJSON = try JSONEncoder().encode(rows[2])
        let empty = try #require(JSONNode.parse(bytes: Array(emptyJSON)))
        for field in ["grantRate", "ci95", "exposedGrantRate", "ci95Exposed", "uplift", "pValue"] {
            #expect(empty[field]?.isNull == true, "\(field)")
        }
    }

    // MARK: The guard

    let control = VariantCounts(variant: "dialog", exposed: 1000, answered: 800, granted: 300)
    let worse = VariantCounts(variant: "primer", exposed: 1000, answered: 800, granted: 250)

    @Test("A drop of more than maxDrop with one-sided p below 0.01 stops, with the audit's details")
    func breach() throws {
        let rule = try ExperimentGuard(maxDrop: 0.04)
        let breach = try #require(rule.breach(control: control, variant: worse))
        #expect(breach.variant == "primer")
        #expect(breach.controlRate == 0.3)
        #expect(breach.variantRate == 0.25)
        #expect(near(breach.p, 0.006141369486188706))
    }

    @Test("A drop of exactly maxDrop does not stop (more than, on the counts)")
    func exactDrop() throws {
        #expect(try ExperimentGuard(maxDrop: 0.05).breach(control: control, variant: worse) == nil)
        // 0.55 − 0.50 is 0.050000000000000044 in floating point, with p far below 0.01.
        let big = VariantCounts(variant: "dialog", exposed: 10_000, answered: 10_000, granted: 5_500)
        let half = VariantCounts(variant: "primer", exposed: 10_000, answered: 10_000, granted: 5_000)
        #expect(try ExperimentGuard(maxDrop: 0.05).breach(control: big, variant: half) == nil)
        #expect(try ExperimentGuard(maxDrop: 0.049).breach(control: big, variant: half) != nil)
    }

    @Test("Nothing before both have minAnswered answers, nor without significance, nor for a better variant")
    func noBreach() throws {
        #expect(try ExperimentGuard(maxDrop: 0.04, minAnswered: 801).breach(control: control, variant: worse) == nil)
        #expect(try ExperimentGuard(maxDrop: 0.04, minAnswered: 800).breach(control: control, variant: worse) != nil)
        // p one-sided 0.0126: a five-point drop, not significant at 0.01.
        let close55 = VariantCounts(variant: "dialog", exposed: 1000, answered: 1000, granted: 550)
        let close50 = VariantCounts(variant: "primer", exposed: 1000, answered: 1000, granted: 500)
        #expect(try ExperimentGuard(maxDrop: 0).breach(control: close55, variant: close50) == nil)
        let better = VariantCounts(variant: "primer", exposed: 1000, answered: 800, granted: 400)
        #expect(try ExperimentGuard(maxDrop: 0).breach(control: control, variant: better) == nil)
    }

    @Test("Of several breaching variants, the one with the smallest p; the control is never judged against itself")
    func strongest() throws {
        let rule = try ExperimentGuard(maxDrop: 0)
        let muchWorse = VariantCounts(variant: "button", exposed: 1000, answered: 800, granted: 200)
        let breach = try #require(rule.breach(control: control, variants: [control, worse, muchWorse]))
        #expect(breach.variant == "button")
        #expect(rule.breach(control: control, variants: [control]) == nil)
    }

    @Test("The guard's fields: maxDrop 0 to 1, minAnswered 1 or more, default 100")
    func guardFields() throws {
        #expect(try ExperimentGuard(maxDrop: 0).minAnswered == 100)
        #expect(try ExperimentGuard(maxDrop: 1, minAnswered: 1).maxDrop == 1)
        do {
            _ = try ExperimentGuard(maxDrop: 0.1, minAnswered: 0)
            Issue.record("minAnswered 0 was taken")
        } catch {
            #expect(error.field == "guard.minAnswered")
        }
        do {
            _ = try ExperimentGuard(maxDrop: .nan)
            Issue.record("maxDrop NaN was taken")
        } catch {
            #expect(error.field == "guard.maxDrop")
        }
    }
}
