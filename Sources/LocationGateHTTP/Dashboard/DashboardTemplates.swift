import Foundation
import Mustache

/// The dashboard's Mustache templates (`Dashboard/Templates`, a resource of this target), read
/// and parsed once per process, when the dashboard's routes are built.
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
        case signIn = "signin", message, overview, prompts, escalation, settings, features, device
    }

    /// The templates could not be read: a defect of the build, answered 500 by every page.
    struct LoadError: Error, CustomStringConvertible {
        var description: String
    }

    let library: MustacheLibrary

    /// The templates shipped with this build, read once (the first use, when `DashboardRoutes`
    /// is made as the server starts).
    static let bundled: Result<DashboardTemplates, LoadError> = {
        guard let folder = Bundle.module.url(forResource: "Templates", withExtension: nil) else {
            return .failure(LoadError(description: "the dashboard's templates are missing from the build"))
        }
        do {
            return .success(try DashboardTemplates(folder: folder))
        } catch let error as LoadError {
            return .failure(error)
        } catch {
            return .failure(LoadError(description: "the dashboard's templates could not be read: \(error)"))
        }
    }()

    /// Reads and parses every `.mustache` file of `folder`; each `Name` must be among them.
    init(folder: URL) throws {
        var library = MustacheLibrary()
        let files = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".mustache") }
        for file in files.sorted() {
            let text = try String(contentsOf: folder.appendingPathComponent(file), encoding: .utf8)
            do {
                try library.register(text, named: String(file.dropLast(".mustache".count)))
            } catch {
                throw LoadError(description: "template \(file) does not parse: \(error)")
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
