import Testing

@testable import LocationAuthorization

@Suite("Prompt answers: P1-P6", .timeLimit(.minutes(1)))
struct PromptRulesTests {
    /// A device with the given prompt on screen.
    static func pending(_ prompt: Prompt, _ platform: Platform = .iOS, _ os: String? = "17.4") -> DeviceState {
        switch prompt {
        case .whenInUse:
            var state = makeDevice(platform, os)
            state.accept(requestWhenInUse)
            return state
        case .alwaysFirst, .legacyAlways:
            var state = makeDevice(platform, os)
            state.accept(requestAlways)
            return state
        case .alwaysUpgrade:
            var state = whenInUseDevice(platform, os)
            state.accept(requestAlways)
            return state
        case .alwaysSecond:
            var state = makeDevice(platform, os)
            state.accept([requestAlways, respond(.allowWhileUsing), .alwaysEventOccurred(.regionMonitoring)])
            return state
        case .fullAccuracy:
            var state = whenInUseDevice(platform, os)
            state.accept([.settingsChanged(authorization: nil, preciseLocation: false),
                          .authorizationRequested(.temporaryFullAccuracy("Nav"))])
            return state
        case .foreground, .backgroundDialog, .backgroundSettings, .precise, .locationButton:
            Issue.record("\(prompt) is Android's, answered by results (AndroidRulesTests)")
            return makeDevice(platform, os)
        }
    }

    static let cases: [(Prompt, Platform, String?)] = [
        (.whenInUse, .iOS, "17.4"), (.whenInUse, .iOS, "12.4"), (.whenInUse, .macOS, "14.0"), (.whenInUse, .tvOS, "17.0"),
        (.alwaysFirst, .iOS, "17.4"), (.alwaysFirst, .macOS, "14.0"), (.alwaysUpgrade, .iOS, "17.4"),
        (.alwaysSecond, .iOS, "17.4"), (.legacyAlways, .iOS, "12.0"), (.legacyAlways, .iOS, "10.0"),
        (.fullAccuracy, .iOS, "17.4"),
    ]

    @Test("Every prompt accepts exactly the choices it offers")
    func everyChoiceOfferedOrNot() {
        for (prompt, platform, os) in Self.cases {
            let state = Self.pending(prompt, platform, os)
            #expect(state.pendingPrompt == prompt, "\(prompt) on \(platform) \(os ?? "")")
            let offered = prompt.offeredChoices(in: state.context)
            for choice in PromptChoice.allCases {
                var copy = state
                if offered.contains(choice) {
                    let effects = copy.accept(respond(choice))
                    #expect(!effects.isEmpty)
                    #expect(copy.pendingPrompt == nil)
                } else {
                    copy.expectRejection(respond(choice), .choiceNotOffered)
                }
            }
        }
    }

    @Test("The rejection message names the choice and the prompt")
    func rejectionMessage() {
        var state = Self.pending(.whenInUse)
        do {
            _ = try state.apply(respond(.changeToAlwaysAllow))
            Issue.record("expected a rejection")
        } catch {
            #expect(error.message.hasPrefix("promptResponded: choice changeToAlwaysAllow is not offered by the whenInUse prompt"))
        }
    }

    @Test("An answer with no prompt pending is rejected")
    func noPromptPending() {
        var state = makeDevice()
        state.expectRejection(respond(.allowWhileUsing), .noPromptPending)
    }

    @Test("P1 whenInUse: allow while using, allow once, don't allow")
    func p1() {
        var allow = Self.pending(.whenInUse)
        #expect(allow.accept(respond(.allowWhileUsing)) == [.statusChanged(from: .notDetermined, to: .authorizedWhenInUse)])
        #expect(!allow.temporary)
        var once = Self.pending(.whenInUse)
        #expect(once.accept(respond(.allowOnce)) == [.statusChanged(from: .notDetermined, to: .authorizedWhenInUse)])
        #expect(once.temporary)
        var deny = Self.pending(.whenInUse)
        #expect(deny.accept(respond(.dontAllow)) == [.statusChanged(from: .notDetermined, to: .denied)])
        #expect(deny.authorization == .denied)
    }

    @Test("P2 alwaysFirst: allow while using is Provisional Always; allow once is temporary; don't allow denies")
    func p2() {
        var allow = Self.pending(.alwaysFirst)
        #expect(allow.accept(respond(.allowWhileUsing)) == [.statusChanged(from: .notDetermined, to: .authorizedAlways)])
        #expect(allow.provisional)
        var once = Self.pending(.alwaysFirst)
        once.accept(respond(.allowOnce))
        #expect(once.status == .authorizedWhenInUse && once.temporary && !once.provisional)
        var deny = Self.pending(.alwaysFirst)
        deny.accept(respond(.dontAllow))
        #expect(deny.status == .denied)
    }

    @Test("P3 alwaysUpgrade: keep only while using changes nothing; change to always is permanent")
    func p3() {
        var keep = Self.pending(.alwaysUpgrade)
        #expect(keep.accept(respond(.keepOnlyWhileUsing)) == [.noEffect(.unchanged)])
        #expect(keep.status == .authorizedWhenInUse)
        var change = Self.pending(.alwaysUpgrade)
        #expect(change.accept(respond(.changeToAlwaysAllow)) == [.statusChanged(from: .authorizedWhenInUse, to: .authorizedAlways)])
        #expect(!change.provisional)
    }

    @Test("P4 alwaysSecond: keep only while using drops the event; change to always delivers it silently")
    func p4() {
        var keep = Self.pending(.alwaysSecond)
        #expect(keep.accept(respond(.keepOnlyWhileUsing)) == [.eventDelivered(false), .statusChanged(from: .authorizedAlways, to: .authorizedWhenInUse)])
        #expect(!keep.provisional)
        var change = Self.pending(.alwaysSecond)
        #expect(change.accept(respond(.changeToAlwaysAllow)) == [.eventDelivered(true)])
        #expect(change.status == .authorizedAlways && !change.provisional)
    }

    @Test("P5 legacyAlways: allow always, allow while using, don't allow")
    func p5() {
        var always = Self.pending(.legacyAlways, .iOS, "12.0")
        always.accept(respond(.allowAlways))
        #expect(always.status == .authorizedAlways && !always.provisional)
        var whileUsing = Self.pending(.legacyAlways, .iOS, "12.0")
        whileUsing.accept(respond(.allowWhileUsing))
        #expect(whileUsing.status == .authorizedWhenInUse && whileUsing.alwaysPromptUsed)
        var deny = Self.pending(.legacyAlways, .iOS, "10.0")
        deny.accept(respond(.dontAllow))
        #expect(deny.status == .denied)
    }

    @Test("P6 fullAccuracy: allow grants temporary full accuracy; keep reduced changes nothing")
    func p6() {
        var allow = Self.pending(.fullAccuracy)
        #expect(allow.accept(respond(.allowFullAccuracy)) == [.accuracyChanged(from: .reduced, to: .full)])
        #expect(allow.temporaryFullAccuracy && allow.accuracy == .reduced)
        var keep = Self.pending(.fullAccuracy)
        #expect(keep.accept(respond(.keepReducedAccuracy)) == [.noEffect(.unchanged)])
        #expect(keep.effectiveAccuracy == .reduced)
    }

    @Test("macOS prompts offer only Allow and Don't Allow")
    func macOSChoices() {
        for prompt in [Prompt.whenInUse, .alwaysFirst] {
            let state = Self.pending(prompt, .macOS, "14.0")
            #expect(prompt.offeredChoices(in: state.context) == [.allowWhileUsing, .dontAllow])
        }
    }
}
