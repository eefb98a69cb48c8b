import Foundation
import LocationAuthorization
import LocationGateService
import Testing

@testable import LocationGateHTTP

/// The feature editor and the kill switches (SPEC §15) rendered without a server: the form shows
/// the feature, what a client sent is escaped, the preview is a table, and the form's fields are
/// read back as the API reads a body.
@Suite("Dashboard: the feature editor's template and form")
struct FeatureEditorTemplateTests {
    static let hostile = #"<script>alert("1&2")</script>"#
    static let escaped = "&lt;script&gt;alert(&quot;1&amp;2&quot;)&lt;/script&gt;"

    @Test("The editor shows the feature's fields, escapes its description and the preview's sample, and renders the preview as a table")
    func editor() throws {
        let feature = Feature(
            key: "nearby", requires: .always, services: [.visits, .heading], accuracy: .full, description: Self.hostile,
            delivery: .modern, background: false, disabled: true, minAppVersion: AppVersion("5.2"))
        let preview = FeaturePreview(devices: 7, changes: [
            FeaturePreview.Change(
                from: .init(enabled: true, reason: "authorized"), to: .init(enabled: false, reason: "disabledByOperator"),
                devices: 5, byPlatform: ["iOS": 4, "android": 1], sample: [FeaturePreview.Device(userId: Self.hostile, deviceId: "d-1")]),
        ])
        let page = DashboardRoutes.editorPage(key: "nearby", form: FeatureForm(feature: feature), isNew: false, preview: preview)
        let html = try DashboardTemplateTests.render(page.view(for: DashboardTemplateTests.request("/dashboard/features/nearby?preview=1")), .feature)
        #expect(!html.contains("<script"), "\(html)")
        #expect(html.contains(#"<input name="description" value="\#(Self.escaped)""#))
        #expect(html.contains(#"<option value="always" selected>always</option>"#))
        #expect(html.contains(#"<option value="full" selected>full</option>"#))
        #expect(html.contains(#"<option value="modern" selected>modern</option>"#))
        #expect(html.contains(#"<option value="false" selected>no</option>"#))
        #expect(html.contains(#"name="services.visits" value="true" checked"#) && html.contains(#"name="services.heading" value="true" checked"#))
        #expect(!html.contains(#"name="services.standard" value="true" checked"#) && html.contains(#"name="services.standard" value="true">"#))
        #expect(!html.contains(#"name="services" "#), "each service's box has a name of its own: a field is never sent twice")
        #expect(html.contains(#"<input name="minAppVersion" value="5.2""#))
        #expect(html.contains(#"name="disabled" value="true" checked"#))
        #expect(html.contains(#"<form class="editor" id="feature" method="get" action="/dashboard/features/nearby">"#))
        #expect(html.contains(#"formmethod="post" formaction="/dashboard/features/nearby""#))
        #expect(html.contains(#"<table id="preview">"#))
        #expect(html.contains("<td>on</td><td>off (disabledByOperator)</td>"))
        #expect(html.contains("android 1, iOS 4"))
        #expect(html.contains("\(Self.escaped)/d-1"))
        #expect(html.contains("csv=preview"), "the preview's table has its CSV link")
        #expect(!html.contains(#"id="unchanged""#))
    }

    @Test("A new key's editor is empty; an unchanged preview says so; a refusal shows the API's message, escaped")
    func newAndRefused() throws {
        let empty = DashboardRoutes.editorPage(
            key: "fresh", form: FeatureForm(), isNew: true, error: "minAppVersion: must be " + Self.hostile,
            preview: FeaturePreview(devices: 3, changes: []))
        let html = try DashboardTemplateTests.render(empty.view(for: DashboardTemplateTests.request("/dashboard/features/fresh")), .feature)
        #expect(html.contains("<title>New feature · LocationGate</title>"))
        #expect(html.contains(#"<p class="error" id="error">minAppVersion: must be \#(Self.escaped)</p>"#))
        #expect(html.contains(#"<option value="whenInUse" selected>whenInUse</option>"#))
        #expect(html.contains(#"<option value="" selected>default (yes for always)</option>"#))
        #expect(!html.contains(" checked"))
        #expect(html.contains(#"id="unchanged""#))
        #expect(!html.contains("<script"))
    }

    @Test("The kill switches: one POST form per feature for an admin key's session, none for a read key's")
    func switches() throws {
        let features = [
            Feature(key: "nearby", requires: .whenInUse), Feature(key: "trip-log", requires: .always, disabled: true),
        ]
        for canEdit in [true, false] {
            let page = DashboardPage(
                template: .features, title: "Features", active: "/dashboard/features", filters: nil, groupChoices: [], sections: [],
                catalog: DashboardPage.Catalog(features, canEdit: canEdit))
            let html = try DashboardTemplateTests.render(page.view(for: DashboardTemplateTests.request("/dashboard/features")), .features)
            #expect(html.contains(#"<li data-feature="nearby">"#) && html.contains(#"<span class="state">disabled</span>"#))
            let forms = html.components(separatedBy: #"<form method="post" action="/dashboard/features/"#).count - 1
            #expect(forms == (canEdit ? 2 : 0), "\(html)")
            #expect(html.contains(#"action="/dashboard/features/nearby/switch"><input type="hidden" name="disabled" value="true"><button type="submit">Turn off</button>"#) == canEdit)
            #expect(html.contains(#"action="/dashboard/features/trip-log/switch"><input type="hidden" name="disabled" value="false"><button type="submit">Turn on</button>"#) == canEdit)
            #expect(html.contains(#"<a href="/dashboard/features/nearby">nearby</a>"#) == canEdit)
        }
    }

    @Test("The form's fields are read as PUT reads a body: defaults, checkboxes, a refused floor, a trimmed one")
    func form() throws {
        let body = "requires=always&services.visits=true&services.regionMonitoring=true&accuracy=any&delivery=locationManager&background="
            + "&description=Lights+on%21&minAppVersion=+5.2+&disabled=true&preview=1"
        let form = try FeatureForm(form: DashboardForm(body, allowed: FeatureForm.fieldNames.union(["preview"])))
        let feature = try form.feature(key: "arrival")
        #expect(feature == Feature(
            key: "arrival", requires: .always, services: [.visits, .regionMonitoring], description: "Lights on!", disabled: true,
            minAppVersion: AppVersion("5.2")))
        #expect(feature.background, "the default for always")
        var bad = form
        bad.minAppVersion = "5.x"
        #expect(throws: ServiceError.self) { try bad.feature(key: "arrival") }
        var wrong = form
        wrong.requires = "sometimes"
        #expect(throws: ServiceError.self) { try wrong.feature(key: "arrival") }
        // Read back from the feature, the form gives the same feature.
        #expect(try FeatureForm(feature: feature).feature(key: "arrival") == feature)
    }
}
