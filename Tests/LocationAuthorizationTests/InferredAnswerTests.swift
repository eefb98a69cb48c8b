import PropertyBased
import Testing

@testable import LocationAuthorization

/// O2: what a real app reports (requests and observed statuses) yields the answers it cannot see.
@Suite("O2: answers inferred from observed statuses", .timeLimit(.minutes(1)))
struct InferredAnswerTests {
    /// A device with `prompt` pending, built by the A rules.
    static func pending(_ prompt: Prompt, _ platform: Platform = .iOS, _ os: String? = nil) -> DeviceState {
        var state = makeDevice(platform, os)
        switch prompt {
        case .whenInUse: state.accept(requestWhenInUse)
        case .alwaysFirst, .legacyAlways: state.accept(requestAlways)
        case .alwaysUpgrade: state.accept([requestWhenInUse, respond(.allowWhileUsing), requestAlways])
        case .alwaysSecond: state.accept([requestAlways, respond(.allowWhileUsing), .alwaysEventOccurred(.visits)])
        case .fullAccuracy:
            state = makeDevice(platform, os, purposeKeys: ["Nav"])
            state.accept([requestWhenInUse, respond(.allowWhileUsing), .settingsChanged(authorization: nil, preciseLocation: false),
                          .authorizationRequested(.temporaryFullAccuracy("Nav"))])
        case .foreground, .backgroundDialog, .backgroundSettings, .precise, .locationButton:
            Issue.record("\(prompt) is Android's, answered by results (AndroidRulesTests)")
        }
        #expect(state.pendingPrompt == prompt, "set-up of \(prompt)")
        return state
    }

    /// Every row of O2's table: (prompt, OS, observed status, accuracy, the choice it implies).
    static let rows: [(Prompt, String?, AuthorizationStatus, Accuracy?, PromptChoice)] = [
        (.whenInUse, nil, .authorizedWhenInUse, nil, .allowWhileUsing),
        (.whenInUse, nil, .denied, nil, .dontAllow),
        (.alwaysFirst, nil, .authorizedAlways, nil, .allowWhileUsing),
        (.alwaysFirst, nil, .authorizedWhenInUse, nil, .allowOnce),
        (.alwaysFirst, nil, .denied, nil, .dontAllow),
        (.alwaysUpgrade, nil, .authorizedAlways, nil, .changeToAlwaysAllow),
        (.alwaysSecond, nil, .authorizedWhenInUse, nil, .keepOnlyWhileUsing),
        (.legacyAlways, "12.4", .authorizedAlways, nil, .allowAlways),
        (.legacyAlways, "12.4", .authorizedWhenInUse, nil, .allowWhileUsing),
        (.legacyAlways, "12.4", .denied, nil, .dontAllow),
        (.fullAccuracy, nil, .authorizedWhenInUse, .full, .allowFullAccuracy),
    ]

    @Test("O2 every row of the table: the observation is applied as the inferred answer, effects answerInferred then reconciled")
    func table() {
        for (prompt, os, observed, accuracy, choice) in Self.rows {
            var explicit = Self.pending(prompt, .iOS, os)
            var inferred = explicit
            let before = explicit.status
            explicit.accept(respond(choice))
            let effects = inferred.accept(.statusObserved(observed, accuracy: accuracy))
            #expect(effects.first == .answerInferred(prompt: prompt, choice: choice), "\(prompt) \(observed)")
            #expect(effects.dropFirst().first == .reconciled(from: before, to: observed), "\(prompt) \(observed): \(effects)")
            #expect(!effects.contains { if case .statusChanged = $0 { true } else { false } })
            // The same state as the explicit answer, but for O2's own mark.
            inferred.inferredAllowWhileUsing = false
            #expect(inferred == explicit, "\(prompt) \(observed)")
        }
    }

    @Test("O2 P2 through an observation: Allow While Using at alwaysFirst is provisional Always")
    func provisional() {
        var state = Self.pending(.alwaysFirst)
        state.accept(.statusObserved(.authorizedAlways, accuracy: nil))
        #expect(state.provisional && state.authorization == .authorizedAlways)
    }

    @Test("O2 unobservable answers (keep When In Use at alwaysUpgrade, Allow at alwaysSecond, keep reduced accuracy) leave the prompt pending")
    func unobservable() {
        for (prompt, observed, accuracy) in [(Prompt.alwaysUpgrade, AuthorizationStatus.authorizedWhenInUse, Accuracy?.none),
                                             (.alwaysSecond, .authorizedAlways, nil), (.fullAccuracy, .authorizedWhenInUse, .reduced)] {
            var state = Self.pending(prompt)
            #expect(state.accept(.statusObserved(observed, accuracy: accuracy)) == [.noEffect(.confirmed)], "\(prompt)")
            #expect(state.pendingPrompt == prompt)
            // An explicit answer still resolves it.
            #expect(throws: Never.self) { try state.apply(respond(prompt == .fullAccuracy ? .keepReducedAccuracy : prompt == .alwaysSecond ? .changeToAlwaysAllow : .keepOnlyWhileUsing)) }
            #expect(state.pendingPrompt == nil)
        }
    }

    @Test("O2 a status the table has no row for applies O1 unchanged")
    func noRow() {
        var state = Self.pending(.alwaysUpgrade)
        #expect(state.accept(.statusObserved(.denied, accuracy: nil)) == [.reconciled(from: .authorizedWhenInUse, to: .denied)])
        // Location Services off makes denied ambiguous: no inference, O1 applies.
        var off = Self.pending(.whenInUse)
        off.accept(.locationServicesChanged(enabled: false))
        let effects = off.accept(.statusObserved(.denied, accuracy: nil))
        #expect(!effects.contains { if case .answerInferred = $0 { true } else { false } })
    }

    @Test("O2 correction: Allow While Using inferred, then notDetermined with no Settings change, was Allow Once; corrected once")
    func correction() {
        var state = Self.pending(.whenInUse)
        state.accept(.statusObserved(.authorizedWhenInUse, accuracy: nil))
        #expect(state.inferredAllowWhileUsing)
        state.accept(.appStateChanged(.background, backgroundIndicator: false))
        let effects = state.accept(.statusObserved(.notDetermined, accuracy: nil))
        #expect(effects == [.reconciled(from: .authorizedWhenInUse, to: .notDetermined),
                            .answerCorrected(prompt: .whenInUse, from: .allowWhileUsing, to: .allowOnce)])
        #expect(!state.inferredAllowWhileUsing && state.status == .notDetermined)
        // Only once: asking again and being observed notDetermined again corrects nothing.
        #expect(state.accept(.statusObserved(.notDetermined, accuracy: nil)) == [.noEffect(.confirmed)])
    }

    @Test("O2 no correction after a Settings change, an explicit answer, or on a prompt without Allow Once")
    func noCorrection() {
        var settings = Self.pending(.whenInUse)
        settings.accept([.statusObserved(.authorizedWhenInUse, accuracy: nil), .settingsChanged(authorization: nil, preciseLocation: true)])
        #expect(!settings.accept(.statusObserved(.notDetermined, accuracy: nil)).contains { if case .answerCorrected = $0 { true } else { false } })

        var explicit = makeDevice()
        explicit.accept([requestWhenInUse, respond(.allowWhileUsing)])
        #expect(!explicit.inferredAllowWhileUsing)
        #expect(!explicit.accept(.statusObserved(.notDetermined, accuracy: nil)).contains { if case .answerCorrected = $0 { true } else { false } })

        // iOS 12 offers no Allow Once: Allow While Using is certain.
        var legacy = Self.pending(.whenInUse, .iOS, "12.4")
        legacy.accept(.statusObserved(.authorizedWhenInUse, accuracy: nil))
        #expect(!legacy.inferredAllowWhileUsing)

        // The grant left When In Use in between (Always observed): not Allow Once.
        var upgraded = Self.pending(.whenInUse)
        upgraded.accept([.statusObserved(.authorizedWhenInUse, accuracy: nil), .statusObserved(.authorizedAlways, accuracy: nil)])
        #expect(!upgraded.accept(.statusObserved(.notDetermined, accuracy: nil)).contains { if case .answerCorrected = $0 { true } else { false } })
    }

    @Test("O2 decision: on macOS (M1) Allow at the whenInUse prompt is observed as authorizedAlways and inferred as allowWhileUsing")
    func macOS() {
        var state = Self.pending(.whenInUse, .macOS)
        let effects = state.accept(.statusObserved(.authorizedAlways, accuracy: nil))
        #expect(effects.first == .answerInferred(prompt: .whenInUse, choice: .allowWhileUsing))
        #expect(state.authorization == .authorizedAlways && !state.provisional)
    }

    /// A random life of a device told twice: with the person's choices (`promptResponded`), and
    /// as a real app sees it (each answer replaced by the status the delegate then reports).
    struct Twin {
        var explicit: [LocationEvent] = []
        var observed: [LocationEvent] = []
        var explicitAnswers = 0, explicitGrants = 0

        /// Choices an observation reveals: O2's unobservable answers, Allow Once at the whenInUse
        /// prompt (it looks like Allow While Using until it expires), answers given while a
        /// restriction or Location Services off hide the status, and a full-accuracy answer while
        /// the app holds no grant (Allow Once expired under the prompt: accuracy means nothing
        /// to an app without a grant, and O2's table has no row for it) are left out.
        static func observable(_ prompt: Prompt, _ choice: PromptChoice) -> Bool {
            switch (prompt, choice) {
            case (.alwaysUpgrade, .keepOnlyWhileUsing), (.alwaysSecond, .changeToAlwaysAllow), (.fullAccuracy, .keepReducedAccuracy),
                 (.whenInUse, .allowOnce):
                false
            default:
                true
            }
        }

        init(_ numbers: [Int]) {
            let scenario = Scenario(numbers)
            var state = scenario.start
            explicit = [.contextReported(scenario.context)]
            observed = explicit
            for number in numbers.dropFirst(4) {
                var event = Scenario.event(number)
                if case .promptResponded = event {
                    // A restriction or Location Services off hide the status the answer makes.
                    guard let prompt = state.pendingPrompt, !state.restricted, state.locationServicesEnabled else { continue }
                    if prompt == .fullAccuracy && ![.authorizedWhenInUse, .authorizedAlways].contains(state.status) { continue }
                    let choices = prompt.offeredChoices(in: state.context).filter { Self.observable(prompt, $0) }
                    guard !choices.isEmpty else { continue }
                    event = .promptResponded(choices[number % choices.count])
                }
                // Raw observations would tell a different story than the choices: left out.
                if case .statusObserved = event { continue }
                guard let transition = try? state.reduce(event) else { continue }
                explicit.append(event)
                if case .promptResponded = event {
                    observed.append(.statusObserved(transition.state.status, accuracy: transition.state.effectiveAccuracy))
                    explicitAnswers += 1
                    if [.authorizedWhenInUse, .authorizedAlways].contains(transition.state.authorization) { explicitGrants += 1 }
                } else {
                    observed.append(event)
                }
                state = transition.state
            }
        }
    }

    @Test("O2 property: a population reported through observations ends in the same states as one reported with its choices, with the same grant rate")
    func observationsMatchChoices() async {
        await propertyCheck(count: 1000, input: scenarioInput) { numbers in
            let twin = Twin(numbers)
            let explicit = fold(DeviceState(), twin.explicit)
            var answers = 0, grants = 0
            let observed = fold(DeviceState(), twin.observed) { _, _, transition in
                if case .answerInferred = transition.effects.first {
                    answers += 1
                    if [.authorizedWhenInUse, .authorizedAlways].contains(transition.state.authorization) { grants += 1 }
                }
            }
            #expect(observed.status == explicit.status, "\(twin.explicit)")
            #expect(observed.provisional == explicit.provisional && observed.temporary == explicit.temporary)
            #expect(observed.pendingPrompt == explicit.pendingPrompt && observed.effectiveAccuracy == explicit.effectiveAccuracy)
            #expect(answers == twin.explicitAnswers && grants == twin.explicitGrants, "\(twin.explicit)")
        }
    }
}
