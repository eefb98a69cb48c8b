/// What `layout.mustache` shows around every page: the title, and once signed in the
/// navigation (the current page's link marked) and the sign-out form. Every view model of a page
/// carries one as `layout`.
struct DashboardLayout {
    struct Link {
        var href: String
        var label: String
        var active: Bool
    }

    var title: String
    var signedIn: Bool
    /// Empty when signed out.
    var navigation: [Link]

    /// `active`: the address of the page's own link, or empty for a page without one.
    init(title: String, active: String, signedIn: Bool) {
        self.title = title
        self.signedIn = signedIn
        navigation = signedIn ? Self.pages.map { Link(href: $0.href, label: $0.label, active: $0.href == active) } : []
    }

    /// The pages the navigation links to, in order.
    static let pages: [(href: String, label: String)] = [
        (href: "/dashboard", label: "Overview"), (href: "/dashboard/prompts", label: "Prompts"),
        (href: "/dashboard/escalation", label: "Escalation"), (href: "/dashboard/location-button", label: "Location button"),
        (href: "/dashboard/settings", label: "Settings"),
        (href: "/dashboard/features", label: "Features"), (href: "/dashboard/experiments", label: "Experiments"),
        (href: "/dashboard/activity", label: "Activity"),
    ]
}

/// The sign-in form (`signin.mustache`), with the reason a sign-in was refused.
struct SignInView {
    var layout: DashboardLayout
    var error: String?
}

/// A page that only says what was wrong (`message.mustache`), with a link back to the overview
/// when `back`.
struct MessageView {
    var layout: DashboardLayout
    var message: String
    var back: Bool
}
