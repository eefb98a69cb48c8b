import Foundation

/// What the dashboard knows of its own address (SPEC §8): the origins its two POSTs (sign-in,
/// sign-out) accept, and whether its cookie is `Secure`. Both come from the configuration
/// (`LOCGATE_PUBLIC_URL`) and the `Host` the request was sent to, never from a header a client
/// chooses freely such as `X-Forwarded-Proto`: a browser sets `Origin` and `Host` itself, and
/// a page of another site cannot forge either.
struct DashboardSite: Sendable {
    /// The cookie is sent over https only: `LOCGATE_PUBLIC_URL` is https (a TLS-terminating
    /// proxy in front). The server does not serve TLS itself.
    let secure: Bool
    /// The origin of `LOCGATE_PUBLIC_URL`, normalised (`origin(scheme:authority:)`).
    let publicOrigin: String?

    init(publicURL: URL?) {
        let parts = publicURL.flatMap { Self.split($0.absoluteString, allowingPath: true) }
        publicOrigin = parts.flatMap { Self.origin(scheme: $0.scheme, authority: $0.authority) }
        secure = parts?.scheme == "https"
    }

    /// The scheme people reach this server with: https behind an https public URL, else http.
    var scheme: String { secure ? "https" : "http" }

    /// Whether a POST's `Origin` is this server's own: this server's scheme with the `Host` the
    /// request was sent to, or the public URL's origin. A missing, `null` or other origin is not.
    func accepts(origin: String?, host: String?) -> Bool {
        guard let origin, let parts = Self.split(origin, allowingPath: false),
              let given = Self.origin(scheme: parts.scheme, authority: parts.authority)
        else { return false }
        if let publicOrigin, given == publicOrigin { return true }
        guard let host, let own = Self.origin(scheme: scheme, authority: host) else { return false }
        return given == own
    }

    /// `scheme://host[:port]` in lowercase, without the scheme's default port (80 for http,
    /// 443 for https), so that equal origins compare equal as text; nil for an authority with
    /// user information or nothing in it.
    static func origin(scheme: String, authority: String) -> String? {
        let scheme = scheme.lowercased()
        var authority = authority.lowercased()
        guard !authority.isEmpty, !authority.contains("@"), !authority.contains("/") else { return nil }
        let defaultPort = scheme == "https" ? ":443" : scheme == "http" ? ":80" : nil
        if let defaultPort, authority.hasSuffix(defaultPort) { authority.removeLast(defaultPort.count) }
        guard !authority.isEmpty else { return nil }
        return "\(scheme)://\(authority)"
    }

    /// The scheme and authority of `scheme://authority[/path]`; with `allowingPath` false (an
    /// `Origin` header), nothing may follow the authority.
    static func split(_ text: String, allowingPath: Bool) -> (scheme: String, authority: String)? {
        guard let separator = text.range(of: "://") else { return nil }
        let scheme = text[..<separator.lowerBound].lowercased()
        guard scheme == "http" || scheme == "https" else { return nil }
        let rest = text[separator.upperBound...]
        let end = rest.firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? rest.endIndex
        guard allowingPath || end == rest.endIndex else { return nil }
        return (scheme, String(rest[..<end]))
    }
}
