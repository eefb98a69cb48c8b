import Mustache

extension DashboardTable {
    /// A table's rows as markup, for `table.mustache`'s unescaped `{{{body}}}`. Only this file
    /// can make one, and it writes every text of a cell through `HTMLText.escape`: cells hold
    /// no markup, whatever a client sent.
    ///
    /// Rows are written here rather than by the template because a table is most of what a page
    /// renders (the overview's trend is a row per prompt and day), and Mustache finds each name
    /// of a cell by a dynamic lookup: at ten million events the overview spent four fifths of
    /// its time in them.
    ///
    /// A number keeps the analytics API's exact value in `data-value`; a marked cell is an
    /// inferred answer; a cell of counts (a prompt's choices) names each with its exact value
    /// in `data-value`; a cell of fields (an event's data) is a definition list; an API name
    /// is shown under a sentence as `<code>`. An empty table says so in one cell across its
    /// columns.
    struct Body: MustacheCustomRenderable, Sendable {
        let renderText: String
        var isNull: Bool { false }

        fileprivate init(_ markup: String) { renderText = markup }
    }

    var body: Body {
        var html = ""
        guard !rows.isEmpty else {
            return Body(#"<tr><td colspan="\#(max(1, columns.count))" class="muted">No data for these filters.</td></tr>"# + "\n")
        }
        for row in rows {
            html += "<tr>"
            for cell in row { Self.write(cell, into: &html) }
            html += "</tr>\n"
        }
        return Body(html)
    }

    private static func write(_ cell: Cell, into html: inout String) {
        let escape = HTMLText.escape
        if let value = cell.value {
            html += #"<td class="n" data-value="\#(escape(value))">\#(escape(cell.text))</td>"#
            return
        }
        html += "<td>"
        if cell.counts.isEmpty && cell.fields.isEmpty {
            html += cell.marked ? #"<span class="inferred">\#(escape(cell.text))</span>"# : escape(cell.text)
            if let code = cell.code { html += "<br><code>\(escape(code))</code>" }
        }
        for (index, part) in cell.counts.enumerated() {
            if index > 0 { html += " · " }
            html += #"<span class="part" data-name="\#(escape(part.name))" data-value="\#(escape(part.value ?? ""))">\#(escape(part.name)) \#(escape(part.text))</span>"#
        }
        if !cell.fields.isEmpty {
            html += #"<dl class="fields">"#
            for part in cell.fields {
                html += "<div><dt>\(escape(part.name)):</dt> <dd>\(escape(part.text))</dd></div>"
            }
            html += "</dl>"
        }
        html += "</td>"
    }
}
