/// HTML written by hand: every value that came from a client (user and device ids, app
/// versions, feature descriptions, event data) goes through `escape`, so nothing a client sends
/// becomes markup.
enum HTML {
    static func escape(_ text: String) -> String {
        var escaped = ""
        escaped.reserveCapacity(text.utf8.count)
        for character in text {
            switch character {
            case "&": escaped += "&amp;"
            case "<": escaped += "&lt;"
            case ">": escaped += "&gt;"
            case "\"": escaped += "&quot;"
            case "'": escaped += "&#39;"
            default: escaped.append(character)
            }
        }
        return escaped
    }

    /// A query string from name/value pairs, each percent-encoded.
    static func query(_ items: [(String, String)]) -> String {
        let allowed = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~".utf8)
        func encode(_ text: String) -> String {
            var result = ""
            for byte in text.utf8 {
                if allowed.contains(byte) {
                    result.append(Character(UnicodeScalar(byte)))
                } else {
                    result += "%" + String(byte, radix: 16, uppercase: true).leftPadded(2)
                }
            }
            return result
        }
        return items.map { "\(encode($0.0))=\(encode($0.1))" }.joined(separator: "&")
    }

    /// A path segment, percent-encoded.
    static func segment(_ text: String) -> String {
        String(query([("", text)]).dropFirst())
    }

    /// The page around `body`: navigation, sign-out, and styles that work from 360 px wide up.
    /// Nothing is loaded from outside the server, and no script runs.
    static func page(title: String, active: String, signedIn: Bool, body: String) -> String {
        let links = [("/dashboard", "Overview"), ("/dashboard/prompts", "Prompts"), ("/dashboard/escalation", "Escalation"),
                     ("/dashboard/settings", "Settings"), ("/dashboard/features", "Features")]
        let nav = signedIn
            ? links.map { #"<a href="\#($0.0)"\#($0.0 == active ? #" class="active""# : "")>\#($0.1)</a>"# }.joined()
                + #"<form method="post" action="/dashboard/signout" class="signout"><button type="submit">Sign out</button></form>"#
            : ""
        return """
            <!doctype html>
            <html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
            <title>\(escape(title)) · LocationGate</title>
            <style>\(style)</style></head>
            <body><header><strong>LocationGate</strong><nav>\(nav)</nav></header>
            <main><h1>\(escape(title))</h1>\(body)</main></body></html>
            """
    }

    static let style = """
        *{box-sizing:border-box}body{margin:0;font:15px/1.45 system-ui,-apple-system,sans-serif;color:#1c2430;background:#f6f7f9}
        header{display:flex;flex-wrap:wrap;gap:.5rem 1rem;align-items:center;padding:.6rem 1rem;background:#1c2430;color:#fff}
        nav{display:flex;flex-wrap:wrap;gap:.2rem .8rem;align-items:center}nav a{color:#cfd8e3;text-decoration:none}
        nav a.active{color:#fff;font-weight:600}.signout{display:inline;margin:0}.signout button{font:inherit;font-size:.85rem}
        main{max-width:70rem;margin:0 auto;padding:1rem}h1{font-size:1.4rem;margin:.2rem 0 1rem}h2{font-size:1.1rem;margin:1.6rem 0 .5rem}
        section{background:#fff;border:1px solid #dde2e8;border-radius:6px;padding:.8rem;margin-bottom:1rem;min-width:0}
        .scroll{overflow-x:auto;max-width:100%}table{border-collapse:collapse;font-size:.85rem;min-width:100%}
        th,td{border-bottom:1px solid #e5e9ee;padding:.3rem .5rem;text-align:left;vertical-align:top}
        td.n{text-align:right;font-variant-numeric:tabular-nums}svg{display:block;width:100%;height:auto;max-width:46rem}
        form.filters{display:flex;flex-wrap:wrap;gap:.5rem;align-items:end;margin-bottom:1rem}
        form.filters label{display:flex;flex-direction:column;font-size:.8rem}input,select,button{font:inherit;max-width:100%}
        .csv{font-size:.8rem}.muted{color:#667085}.inferred{color:#8a4b00;font-weight:600}.error{color:#b42318}
        code{font-size:.8rem;word-break:break-all}
        """
}

extension String {
    func leftPadded(_ width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
