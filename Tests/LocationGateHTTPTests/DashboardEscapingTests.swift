import Foundation
import HTTPTypes
import Testing

/// The dashboard's pages through the real router: text a client chose (an app version holding
/// markup, a quote and an ampersand, a feature's description) is text on every page that shows
/// it, never markup. A template that wrote it with a triple mustache would fail here.
@Suite("Dashboard: client text is escaped on every page", .timeLimit(.minutes(2)))
struct DashboardEscapingTests {
    /// SPEC §1 lets `appVersion` be any 1 to 64 bytes.
    static let hostile = #"<script>alert("1&2")</script>"#
    /// The same in JSON, for the events' bodies.
    static let hostileJSON = #"<script>alert(\"1&2\")</script>"#
    /// As `{{ }}` writes it.
    static let escaped = "&lt;script&gt;alert(&quot;1&amp;2&quot;)&lt;/script&gt;"

    @Test("An app version and a feature description holding markup, a quote and an ampersand are escaped on every page")
    func clientTextIsEscaped() async throws {
        try await APIHarness.run { api in
            let (_, admin) = try await api.createApp()
            try await api.putFeature(admin, "nearby", #"{"requires": "whenInUse", "description": "\#(Self.hostileJSON)"}"#)
            func event(_ type: String, _ data: String, _ minute: Int) -> String {
                eventJSON(type, data, user: "u-1", device: "d-1", at: "2026-11-22T09:0\(minute):00Z")
            }
            let appended = try await api.append(admin, [
                event("contextReported", #"{"platform": "iOS", "osVersion": "17.4", "appVersion": "\#(Self.hostileJSON)"}"#, 0),
                event("authorizationRequested", #"{"request": "whenInUse"}"#, 1),
                event("promptResponded", #"{"choice": "allowWhileUsing"}"#, 2),
                event("settingsChanged", #"{"authorization": "never"}"#, 3),
            ])
            #expect(appended.status == .ok, "\(appended.text)")
            let signIn = try await DashboardSessionTests.signIn(api, key: admin, origin: DashboardSessionTests.ownOrigin)
            let session = try #require(DashboardSessionTests.cookie(signIn)).value

            // Pages whose tables (and charts) show the app version.
            let showing = [
                "/dashboard/prompts?groupBy=appVersion", "/dashboard/escalation?groupBy=appVersion",
                "/dashboard/settings?groupBy=appVersion", "/dashboard/users/u-1/devices/d-1",
                "/dashboard/users/u-1/devices/d-1?version=1",
            ]
            for path in showing + ["/dashboard", "/dashboard/features"] {
                let page = try await DashboardSessionTests.page(api, path, session: session)
                #expect(page.status == .ok, "\(path)")
                #expect(page.headers[.contentType] == "text/html; charset=utf-8", "\(path)")
                #expect(!page.text.contains("<script"), "\(path) writes the client's markup as markup")
                #expect(!page.text.contains(#""1&2""#), "\(path) writes a quote or an ampersand unescaped")
                if showing.contains(path) {
                    #expect(page.text.contains(Self.escaped), "\(path) does not show the app version as text")
                }
            }
            // The device page's timeline holds the event's data as named fields (never JSON),
            // escaped too, and its sentence names the app version as text.
            let device = try await DashboardSessionTests.page(api, "/dashboard/users/u-1/devices/d-1", session: session)
            #expect(device.text.contains("<dt>appVersion:</dt> <dd>\(Self.escaped)</dd>"), "\(device.text)")
            #expect(device.text.contains("Reported its context: iOS 17.4, app \(Self.escaped)"), "\(device.text)")
            #expect(!device.text.contains("{&quot;") && !device.text.contains(#"{""#), "no raw JSON")
        }
    }
}
