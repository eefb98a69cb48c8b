import Foundation
import Mustache

/// The dashboard's Mustache templates (`Dashboard/Templates`, carried by the binary as Swift
/// source), parsed once per process, when the dashboard's routes are built.
///
/// Every page is a typed view model rendered by one template, which starts with the `layout`
/// partial and fills its `content` block. `{{ }}` escapes what it writes for HTML (`&`, `<`,
/// `>`, `"`, `'`), so text a client sent (user and device ids, app versions, event data, feature
/// keys) is text on the page whatever it holds, and no code has to remember to escape it. The
/// one value written unescaped is a chart, an `SVGChart.Markup` (`section.mustache`; why that is
/// safe is said at `SVGChart`).
struct DashboardTemplates: Sendable {
    /// The templates: a page's, and the partials they share (`layout`, `filters`, `section`,
    /// `table`). Each is the file `<rawValue>.mustache`.
    enum Name: String, CaseIterable, Sendable {
        case layout, filters, section, table
        case signIn = "signin", message, overview, prompts, escalation, settings, features, device, activity
        /// The location button's funnel (SPEC §12).
        case locationButton = "location-button"
        /// The feature editor and its preview (SPEC §15).
        case feature
        /// Prompt experiments (SPEC §16): the list, and one experiment's results with its stop form.
        case experiments, experiment
    }

    /// The templates could not be read: a defect of the build, answered 500 by every page.
    struct LoadError: Error, CustomStringConvertible {
        var description: String
    }

    let library: MustacheLibrary

    /// The templates this build carries (`EmbeddedTemplates`, written by `Deploy/generate` from
    /// `Dashboard/Templates`: no resource folder beside the binary), parsed once, when
    /// `DashboardRoutes` is made as the server starts.
    static let bundled: Result<DashboardTemplates, LoadError> = {
        do {
            return .success(try DashboardTemplates(files: EmbeddedTemplates.files))
        } catch let error as LoadError {
            return .failure(error)
        } catch {
            return .failure(LoadError(description: "the dashboard's templates could not be read: \(error)"))
        }
    }()

    /// Parses every `.mustache` file of `files` (name and text); each `Name` must be among them.
    init(files: [(name: String, text: String)]) throws {
        var library = MustacheLibrary()
        for file in files where file.name.hasSuffix(".mustache") {
            do {
                try library.register(file.text, named: String(file.name.dropLast(".mustache".count)))
            } catch {
                throw LoadError(description: "template \(file.name) does not parse: \(error)")
            }
        }
        let missing = Name.allCases.filter { library.getTemplate(named: $0.rawValue) == nil }
        guard missing.isEmpty else {
            throw LoadError(description: "templates missing: " + missing.map { "\($0.rawValue).mustache" }.joined(separator: ", "))
        }
        self.library = library
    }

    /// `view` rendered by `template`: a typed view model whose stored properties are the names
    /// the template reads.
    func render(_ view: Any, _ template: Name) throws -> String {
        guard let text = library.render(view, withTemplate: template.rawValue) else {
            throw LoadError(description: "no template \(template.rawValue)")
        }
        return text
    }
}
