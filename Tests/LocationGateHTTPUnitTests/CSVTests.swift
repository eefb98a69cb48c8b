import LocationGateJSON
import LocationGateService
import Testing
@testable import LocationGateHTTP

/// `CSV`, the one writer of every CSV the server writes, and its two callers.
@Suite("CSV: RFC 4180 quoting, spreadsheet formulas neutralised, one writer for every CSV")
struct CSVTests {
    @Test("A field holding a comma, a quote, LF, CR or CR LF is quoted with its quotes doubled; formulas get an apostrophe; numbers are only quoted")
    func quoting() {
        let csv = CSV.write(header: ["name", "value"], rows: [
            [.text("a,b"), .number("1")],
            [.text(#"say "hi""#), .number("2.5")],
            [.text("two\nlines"), .number("")],
            [.text("carriage\rreturn"), .number("-3")],
            [.text("crlf\r\ninside"), .text("-3")],
            [.text(#"=HYPERLINK("x")"#), .text("@SUM(A1)")],
            [.text(""), .text("plain")],
        ], lineEnding: .crlf)
        let lines: [String] = [
            "name,value",
            #""a,b",1"#,
            #""say ""hi""",2.5"#,
            "\"two\nlines\",",
            "\"carriage\rreturn\",-3",
            "\"crlf\r\ninside\",'-3",
            #""'=HYPERLINK(""x"")",'@SUM(A1)"#,
            ",plain",
        ]
        let expected = lines.map { $0 + "\r\n" }.joined()
        #expect(Array(csv.utf8) == Array(expected.utf8), "\(csv.debugDescription)")
    }

    @Test("Lines end as the caller asks, the last one too; a header without rows is one line")
    func lineEndings() {
        #expect(CSV.write(header: ["a", "b"], rows: [[.number("1"), .number("2")]], lineEnding: .lf) == "a,b\n1,2\n")
        #expect(Array(CSV.write(header: ["a"], rows: [], lineEnding: .crlf).utf8) == Array("a\r\n".utf8))
    }

    @Test("The analytics CSV: LF, whole numbers as integers, text and JSON quoted as needed")
    func analytics() {
        let rows: [AnalyticsQuery.Row] = [
            [("appVersion", .string("1,2")), ("prompt", .string("whenInUse")), ("shown", .number(3)),
             ("choices", .object([.init(key: "allowOnce", value: .number(1)), .init(key: "dontAllow", value: .number(2))])), ("grantRate", .number(0.5)), ("alwaysRate", .null)],
        ]
        let csv = AnalyticsFormat.csv(rows, kind: .prompts, groupBy: [.appVersion])
        let expected = "appVersion,prompt,shown,choices,grantRate,alwaysRate\n" + #""1,2",whenInUse,3,"{""allowOnce"":1,""dontAllow"":2}",0.5,"# + "\n"
        #expect(csv == expected, "\(csv.debugDescription)")
    }

    @Test("A dashboard table's CSV: CRLF, exact numbers, text neutralised")
    func dashboardTable() {
        let table = DashboardTable(id: "t", title: "T", columns: ["version", "grantRate", "value"], rows: [
            [.count(2), .rate(0.25), .text("=cmd")],
            [.count(3), .rate(nil), .marked("a \"b\"")],
        ])
        let expected = "version,grantRate,value\r\n2,0.25,'=cmd\r\n" + #"3,,"a ""b""""# + "\r\n"
        #expect(Array(table.csv.utf8) == Array(expected.utf8), "\(table.csv.debugDescription)")
    }
}
