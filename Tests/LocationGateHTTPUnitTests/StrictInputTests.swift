import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import LocationAuthorization
import LocationGateJSON
import LocationGateService
import Logging
import NIOCore
import Testing

@testable import LocationGateHTTP

/// SPEC §14 "Strict input", without a database: an event's members, a name twice in any object
/// of any body (in the one parse), a number where an integer is due, a `null` where a value is
/// due, a query parameter twice on every address before the key check, and the dashboard's
/// forms. Each of these was read leniently before.
@Suite("HTTP: strict input", .timeLimit(.minutes(1)))
struct StrictInputTests {
    static let first = "5b1c2a4e-9f3d-4c2b-8a1e-0d2c3b4a5f6e"
    static let second = "0f8e7d6c-5b4a-4392-8170-6f5e4d3c2b1a"

    /// One event's JSON; `fields` go between `occurredAt` and `type`.
    static func event(
        _ fields: String = "", type: String = "appStateChanged", data: String = #"{"state":"foreground"}"#, id: String = first
    ) -> String {
        #"{"id":"\#(id)","userId":"u","deviceId":"d","occurredAt":"2026-11-22T10:00:00Z",\#(fields)"type":"\#(type)","data":\#(data)}"#
    }

    static func batch(_ events: String...) -> String {
        #"{"events":[\#(events.joined(separator: ","))]}"#
    }

    static func decode(_ body: String, maxEvents: Int = 1000) throws(ServiceError) -> [EventSubmission] {
        try EventBatch.decode(Data(body.utf8), maxEvents: maxEvents)
    }

    static func refusal(_ body: String, maxEvents: Int = 1000) -> ServiceError? {
        do throws(ServiceError) {
            _ = try decode(body, maxEvents: maxEvents)
            return nil
        } catch {
            return error
        }
    }

    static func parseFailure(_ text: String) -> JSONNode.ParseError? {
        do throws(JSONNode.ParseError) {
            _ = try JSONNode.parseStrictly(bytes: Array(text.utf8))
            return nil
        } catch {
            return error
        }
    }

    /// Words of the implementation a message must not use (SPEC §14: the API's terms).
    static let implementationWords = ["Int64", "Array<", "Dictionary<", "Swift", "Optional", "JSONNode", "Double", "Decodable"]

    // MARK: - The parser

    @Test("parseStrictly: a name twice in any object is refused with its path, in the one parse; JSON otherwise as parse reads it")
    func repeatedNames() {
        let cases: [(String, String)] = [
            (#"{"a":1,"a":2}"#, "a"),
            (#"{"a":1,"\u0061":2}"#, "a"),
            (#"{"a":[{"b":1},{"c":{"d":1,"d":[]}}]}"#, "a[1].c.d"),
            (#"[[1],[{"x":null,"y":0,"x":null}]]"#, "[1][0].x"),
        ]
        for (text, path) in cases {
            #expect(Self.parseFailure(text) == .repeatedName(JSONNode.Path.parsing(path)), "\(text)")
            if case .repeatedName(let found)? = Self.parseFailure(text) {
                #expect(found.description == path)
            }
            // What reads stored data still takes it (the log holds only what was checked).
            #expect(JSONNode.parse(text) != nil)
        }
        // Not JSON is that first, wherever the repeat is; too deep is its own answer.
        #expect(Self.parseFailure(#"{"a":1,"a":2"#) == .invalid)
        #expect(Self.parseFailure(#"{"a":1,"a":2}]"#) == .invalid)
        #expect(Self.parseFailure(String(repeating: "[", count: 100) + String(repeating: "]", count: 100)) == .tooDeep)
        #expect(Self.parseFailure(#"{"a":1,"a":2,"b":"# + String(repeating: "[", count: 100) + String(repeating: "]", count: 100) + "}") == .tooDeep)
        for text in [#"{"a":{"a":{"a":1}},"b":[{"a":1},{"a":2}]}"#, "[]", "{}", #""x""#, "-0.5e3"] {
            #expect((try? JSONNode.parseStrictly(bytes: Array(text.utf8))) == JSONNode.parse(text), "\(text)")
        }
    }

    @Test("parseStrictly: an object of many members is checked by a set, so its cost follows its size")
    func manyMembers() throws {
        let members = (0..<100_000).map { #""k\#($0)":\#($0)"# }
        let wide = "{" + members.joined(separator: ",") + "}"
        let node = try JSONNode.parseStrictly(bytes: Array(wide.utf8))
        #expect(node.members?.count == 100_000)
        let repeated = "{" + members.joined(separator: ",") + #","k17":0}"#
        #expect(Self.parseFailure(repeated) == .repeatedName(JSONNode.Path([.member("k17")])))
        let late = "{" + (0..<20).map { #""k\#($0)":0"# }.joined(separator: ",") + #","k3":1}"#
        #expect(Self.parseFailure(late) == .repeatedName(JSONNode.Path([.member("k3")])))
    }

    // MARK: - Events

    @Test("An event member SPEC §1 does not define is a 422 naming it and the event's index, whichever reader reads the batch")
    func unknownEventMembers() throws {
        let cases: [(String, String)] = [
            // The misspelt check: read by hand, it would have been an unconditional append.
            (Self.event(#""expectedVerison":3,"#, id: Self.second), "expectedVerison"),
            (Self.event(#""expectedVerison":3,"#, type: "contextReported", data: #"{"appVersion":"1.0"}"#, id: Self.second), "expectedVerison"),
            (Self.event(#""note":"café","#, id: Self.second), "note"),
            (Self.event(#""Data":{},"#, id: Self.second), "Data"),
        ]
        for (second, name) in cases {
            let error = Self.refusal(Self.batch(Self.event(), second))
            #expect(error?.code == .validationFailed && error?.index == 1, "\(second): \(String(describing: error))")
            #expect(error?.message.hasPrefix("\(name): not a field of an event") == true, "\(error?.message ?? "")")
        }
        // Unknown fields inside `data` stay ignored, and are not kept.
        let plain = try Self.decode(Self.batch(Self.event()))
        let extra = try Self.decode(Self.batch(Self.event(data: #"{"state":"foreground","mood":"happy","later":null}"#)))
        #expect(extra == plain)
        // And a batch over its size is 413 before its events are looked at.
        let many = Self.batch(Self.event(#""x":1,"#), Self.event(#""x":1,"#, id: Self.second))
        #expect(Self.refusal(many, maxEvents: 1)?.code == .tooLarge)
    }

    @Test("A name twice anywhere in a batch is a 400 invalidRequest naming it (and its event), on either reader")
    func repeatedNamesInBatches() {
        let cases: [(String, String, Int?)] = [
            (Self.batch(Self.event(), Self.event(data: #"{"state":"foreground","state":"background"}"#, id: Self.second)), "data.state", 1),
            (Self.batch(Self.event(#""userId":"v","#)), "userId", 0),
            (#"{"events":[],"events":[\#(Self.event())]}"#, "events", nil),
            (Self.batch(Self.event(type: "contextReported", data: #"{"platform":"iOS","platform":"android"}"#)), "data.platform", 0),
            (Self.batch(Self.event(data: #"{"state":"foreground","later":{"a":[{"b":1,"b":2}]}}"#)), "data.later.a[0].b", 0),
        ]
        for (body, field, index) in cases {
            let error = Self.refusal(body)
            #expect(error?.code == .invalidRequest && error?.index == index, "\(body): \(String(describing: error))")
            #expect(error?.message.hasPrefix("\(field): given twice") == true, "\(error?.message ?? "")")
            #expect(EventBatch.read(Data(body.utf8)) == nil)
        }
        #expect(Self.refusal(#"{"events":[{"a":1,"a":2}"#)?.code == .malformedJSON, "not JSON comes first")
    }

    @Test("expectedVersion: 1.0 and 1e2 are integers; 1.5, 1e40 and 2^63 are a 422 naming it, not a body that is not JSON")
    func integers() throws {
        for (text, value) in [("1.0", Int64(1)), ("1e2", 100), ("7", 7), ("0", 0)] {
            let read = try Self.decode(Self.batch(Self.event(#""expectedVersion":\#(text),"#)))
            #expect(read.first?.expectedVersion == value, "\(text)")
        }
        for text in ["1.5", "1e40", "9223372036854775808", "-0.5"] {
            let error = Self.refusal(Self.batch(Self.event(id: Self.second), Self.event(#""expectedVersion":\#(text),"#)))
            #expect(error?.code == .validationFailed && error?.index == 1, "\(text): \(String(describing: error))")
            #expect(error?.message.hasPrefix("expectedVersion: must be an integer") == true, "\(error?.message ?? "")")
        }
        // A string is of another JSON type: 400, in the API's words.
        let string = Self.refusal(Self.batch(Self.event(#""expectedVersion":"1","#)))
        #expect(string?.code == .invalidRequest && string?.message.contains("an integer") == true, "\(string?.message ?? "")")
        // An integer field of `data`, read by JSONDecoder.
        let level = Self.refusal(Self.batch(Self.event(type: "contextReported", data: #"{"platform":"android","apiLevel":30.5}"#)))
        #expect(level?.code == .validationFailed && level?.index == 0, "\(String(describing: level))")
        #expect(level?.message.hasPrefix("data.apiLevel:") == true, "\(level?.message ?? "")")
        let whole = try Self.decode(Self.batch(Self.event(type: "contextReported", data: #"{"platform":"android","apiLevel":30.0}"#)))
        if case .contextReported(let context)? = whole.first?.event {
            #expect(context.apiLevel == 30)
        } else {
            Issue.record("not read as a context")
        }
    }

    @Test("A null where an event takes a value is a 422 naming the field and the index; null in an unknown data field is ignored")
    func nullsInEvents() {
        let cases: [(String, String)] = [
            (Self.event(#""expectedVersion":null,"#, id: Self.second), "expectedVersion"),
            (Self.event(data: #"{"state":"background","backgroundIndicator":null}"#, id: Self.second), "data.backgroundIndicator"),
            (Self.event(type: "settingsChanged", data: #"{"authorization":"always","preciseLocation":null}"#, id: Self.second), "data.preciseLocation"),
            (Self.event(type: "contextReported", data: #"{"appVersion":null}"#, id: Self.second), "data.appVersion"),
            (Self.event(type: "contextReported", data: "null", id: Self.second), "data"),
            (#"{"id":"\#(Self.second)","userId":"u","deviceId":null,"occurredAt":"2026-11-22T10:00:00Z","type":"appStateChanged","data":{"state":"foreground"}}"#, "deviceId"),
        ]
        for (second, field) in cases {
            // A well-formed event first: the index is the one at fault.
            let error = Self.refusal(Self.batch(Self.event(), second))
            #expect(error?.code == .validationFailed && error?.index == 1, "\(second): \(String(describing: error))")
            #expect(error?.message.hasPrefix("\(field): must not be null") == true, "\(error?.message ?? "")")
        }
        // A field this type does not know is ignored, null or not.
        #expect(Self.refusal(Self.batch(Self.event(data: #"{"state":"foreground","authorization":null}"#))) == nil)
    }

    @Test("The batch's messages speak the API's terms")
    func messagesInTheAPIsTerms() {
        let bodies = [
            #"{"events":{}}"#, #"{"events":[1]}"#, "[]",
            Self.batch(Self.event(#""expectedVersion":"x","#)), Self.batch(Self.event(#""expectedVersion":1.5,"#)),
            Self.batch(Self.event(data: "[]")), Self.batch(Self.event(type: "contextReported", data: #"{"usageDescriptions":"x"}"#)),
            Self.batch(Self.event(type: "contextReported", data: #"{"apiLevel":1e40}"#)),
        ]
        for body in bodies {
            let message = Self.refusal(body)?.message ?? "accepted"
            #expect(message != "accepted", "\(body)")
            for word in Self.implementationWords {
                #expect(!message.contains(word), "\(body): \(message)")
            }
        }
    }

    // MARK: - Configuration and OFREP bodies

    struct App: Decodable { var name: String }
    struct Key: Decodable { var scope: String; var deviceBound: Bool? }
    struct Retention: Decodable { var days: Int? }
    struct Query: Decodable {
        struct Device: Decodable { var userId: String; var deviceId: String }
        var devices: [Device]
        var features: [String]?
    }

    static func configurationRefusal<Value: Decodable>(_ type: Value.Type, _ json: String, _ shape: ConfigurationBody.Shape) -> APIError? {
        do throws(APIError) {
            _ = try ConfigurationBody.decode(type, from: Data(json.utf8), shape: shape)
            return nil
        } catch {
            return error
        }
    }

    static func memberRefusal(_ json: String, refusingNulls: Bool) -> APIError? {
        do throws(APIError) {
            try ConfigurationBody.checkMembers(of: Data(json.utf8), shape: ConfigurationBody.feature, refusingNulls: refusingNulls)
            return nil
        } catch {
            return error
        }
    }

    @Test("Configuration bodies: null only where GET shows null; a name twice at any depth is 400 with the device's index")
    func configurationBodies() throws {
        let name = Self.configurationRefusal(App.self, #"{"name": null}"#, ConfigurationBody.app)
        #expect(name?.error.code == .validationFailed && name?.status == .unprocessableContent)
        #expect(name?.error.message.hasPrefix("name: must not be null") == true, "\(name?.error.message ?? "")")
        #expect(Self.configurationRefusal(Key.self, #"{"scope": "read", "deviceBound": null}"#, ConfigurationBody.key)?.error.message.hasPrefix("deviceBound:") == true)
        let retention = try ConfigurationBody.decode(Retention.self, from: Data(#"{"days": null}"#.utf8), shape: ConfigurationBody.retention)
        #expect(retention.days == nil, "null keeps everything, as GET shows it")
        let device = Self.configurationRefusal(
            Query.self, #"{"devices": [{"userId": "u", "deviceId": "d"}, {"userId": null, "deviceId": "e"}]}"#, ConfigurationBody.gateQuery)
        #expect(device?.error.code == .validationFailed && device?.error.index == 1)
        #expect(device?.error.message.hasPrefix("devices[1].userId: must not be null") == true, "\(device?.error.message ?? "")")
        let features = Self.configurationRefusal(Query.self, #"{"devices": [], "features": null}"#, ConfigurationBody.gateQuery)
        #expect(features?.error.message.hasPrefix("features:") == true)
        let twice = Self.configurationRefusal(
            Query.self, #"{"devices": [{"userId": "u", "deviceId": "d"}, {"userId": "u", "deviceId": "e", "deviceId": "f"}]}"#,
            ConfigurationBody.gateQuery)
        #expect(twice?.error.code == .invalidRequest && twice?.error.index == 1)
        #expect(twice?.error.message.hasPrefix("devices[1].deviceId: given twice") == true, "\(twice?.error.message ?? "")")
        let deep = Self.configurationRefusal(App.self, #"{"name": "a", "name2": {"x": [{"y": 1, "y": 2}]}}"#, ConfigurationBody.app)
        #expect(deep?.error.code == .invalidRequest && deep?.error.message.hasPrefix("name2.x[0].y: given twice") == true)
    }

    @Test("A feature's PUT: \"disabled\": null is a 422 naming it, minAppVersion null is no floor; a merge patch's nulls are resets")
    func featureNulls() {
        let disabled = Self.memberRefusal(#"{"requires": "always", "disabled": null}"#, refusingNulls: true)
        #expect(disabled?.error.code == .validationFailed && disabled?.error.message.hasPrefix("disabled: must not be null") == true)
        #expect(Self.memberRefusal(#"{"requires": "always", "description": null}"#, refusingNulls: true)?.error.code == .validationFailed)
        #expect(Self.memberRefusal(#"{"requires": "always", "minAppVersion": null}"#, refusingNulls: true) == nil)
        #expect(Self.memberRefusal(#"{"disabled": null, "minAppVersion": null}"#, refusingNulls: false) == nil)
        let twice = Self.memberRefusal(#"{"requires": "always", "services": ["visits"], "requires": "whenInUse"}"#, refusingNulls: false)
        #expect(twice?.error.code == .invalidRequest && twice?.error.message.hasPrefix("requires: given twice") == true)
        #expect(Self.memberRefusal("{", refusingNulls: true) == nil, "not JSON: left to the feature's reader")
    }

    static func target(_ body: String) async -> OFREPError.Failure? {
        var request = Request(
            head: HTTPRequest(method: .post, scheme: "http", authority: "localhost", path: "/ofrep/v1/evaluate/flags"),
            body: RequestBody(buffer: ByteBuffer(string: body)))
        do {
            _ = try await OFREPRoutes.target(from: &request)
            return nil
        } catch let failure as OFREPError.Failure {
            return failure
        } catch {
            Issue.record("\(error)")
            return nil
        }
    }

    @Test("OFREP: a name twice anywhere in the body is a 400 naming it, INVALID_CONTEXT inside the context")
    func ofrepBodies() async {
        let inContext = await Self.target(#"{"context": {"targetingKey": "u", "deviceId": "a", "deviceId": "b"}}"#)
        #expect(inContext?.code == "INVALID_CONTEXT" && inContext?.status == .badRequest)
        #expect(inContext?.details.hasPrefix("context.deviceId: given twice") == true, "\(inContext?.details ?? "")")
        let nested = await Self.target(#"{"context": {"targetingKey": "u", "attributes": {"tier": 1, "tier": 2}}}"#)
        #expect(nested?.code == "INVALID_CONTEXT" && nested?.details.hasPrefix("context.attributes.tier: given twice") == true)
        let root = await Self.target(#"{"context": {"targetingKey": "u"}, "context": {"targetingKey": "v"}}"#)
        #expect(root?.code == "PARSE_ERROR" && root?.details.hasPrefix("context: given twice") == true, "\(root?.details ?? "")")
        #expect(await Self.target(#"{"context": {"targetingKey": "u", "deviceId": "d"}}"#) == nil)
        #expect(await Self.target("")?.code == "TARGETING_KEY_MISSING")
    }

    // MARK: - Query parameters on every address

    /// In place of the key check: every request is refused.
    struct NoKeys: RouterMiddleware {
        typealias Context = AppRequestContext
        func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
            throw APIError(.unauthorized, "a valid API key is required")
        }
    }

    /// In place of the dashboard's session: every request is sent to the sign-in form.
    struct NoSession: RouterMiddleware {
        typealias Context = AppRequestContext
        func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
            DashboardRoutes.toSignIn()
        }
    }

    /// The server's areas as `buildRouter` lays them out, with the key check and the session
    /// refusing everything: what answers first is the middleware under test.
    static func application() -> some ApplicationProtocol {
        let router = IndexedRouter(router: Router(context: AppRequestContext.self))
        router.router.add(middleware: ErrorBodyMiddleware())
        router.router.add(middleware: QueryParametersMiddleware())
        let routes = RouteTable(router: router)
        routes.get("/healthz") { _, _ in Response(status: .ok) }
        let v1 = routes.area("/v1", middleware: [NoKeys()])
        v1.get("/users/:user/devices/:device/gates") { _, _ in Response(status: .ok) }
        let ofrep = routes.area("/ofrep/v1", catchAll: true, middleware: [OFREPErrorMiddleware(), NoKeys()])
        ofrep.post("/evaluate/flags/:key") { _, _ in Response(status: .ok) }
        routes.get("/dashboard/signin") { _, _ in Response(status: .ok) }
        let dashboard = routes.area("/dashboard", catchAll: true, middleware: [NoSession()])
        dashboard.get { _, _ in Response(status: .ok) }
        routes.registerMethodNotAllowed()
        return Application(router: router, logger: Logger(label: "strict-input-tests"))
    }

    @Test("A query parameter given twice is a 400 naming it on every address, before the key check and the session")
    func repeatedQueryParameters() async throws {
        try await Self.application().test(.router) { client in
            let refused: [(HTTPRequest.Method, String, String)] = [
                (.get, "/v1/users/u/devices/d/gates?x=1&x=2", "x"),
                (.get, "/v1/users/u/devices/d/gates?limit=5&limit=5", "limit"),
                (.post, "/v1/users/u/devices/d/gates?a&a", "a"),
                (.get, "/healthz?probe=1&probe=2", "probe"),
                (.get, "/nowhere?from=1&%66rom=2", "from"),
                (.get, "/dashboard?from=2026-01-01&from=2026-01-02", "from"),
                (.get, "/dashboard/nothing?csv=a&csv=a", "csv"),
                (.get, "/dashboard/signin?next=a&next=b", "next"),
            ]
            for (method, uri, name) in refused {
                let reply = try await client.execute(uri: uri, method: method)
                #expect(reply.status == .badRequest, "\(uri)")
                let error = RouteTestSupport.error(reply)
                #expect(error["code"] as? String == "invalidRequest", "\(uri)")
                #expect((error["message"] as? String)?.hasPrefix("\(name): given twice") == true, "\(uri): \(error)")
            }
            // Under /ofrep/, OFREP's body.
            for uri in ["/ofrep/v1/evaluate/flags/nearby?targetingKey=a&targetingKey=b", "/ofrep/v1/event-streams?deviceId=d&deviceId=d"] {
                let method: HTTPRequest.Method = uri.contains("evaluate") ? .post : .get
                let reply = try await client.execute(uri: uri, method: method)
                let json = RouteTestSupport.json(reply)
                #expect(reply.status == .badRequest && json["errorCode"] as? String == "INVALID_CONTEXT", "\(uri): \(json)")
                #expect(json["error"] == nil)
                #expect((json["errorDetails"] as? String)?.contains("given twice") == true)
            }
            let flag = try await client.execute(uri: "/ofrep/v1/evaluate/flags/nearby?a=1&a=1", method: .post)
            #expect(RouteTestSupport.json(flag)["key"] as? String == "nearby")
            // Each once: on to the key check, the session, the route.
            let keyed = try await client.execute(uri: "/v1/users/u/devices/d/gates?x=1&y=1", method: .get)
            #expect(keyed.status == .unauthorized)
            let page = try await client.execute(uri: "/dashboard?from=2026-01-01&to=2026-01-02", method: .get)
            #expect(page.status == .seeOther)
            let probe = try await client.execute(uri: "/healthz?probe=1", method: .get)
            #expect(probe.status == .ok)
            let bare = try await client.execute(uri: "/healthz", method: .get)
            #expect(bare.status == .ok)
            let ofrep = try await client.execute(uri: "/ofrep/v1/evaluate/flags/nearby?a=1", method: .post)
            #expect(ofrep.status == .unauthorized && RouteTestSupport.json(ofrep)["errorCode"] as? String == "GENERAL")
        }
    }

    // MARK: - The dashboard's forms

    static func formRefusal(_ text: String, allowed: Set<String>) -> ServiceError? {
        do throws(ServiceError) {
            _ = try DashboardForm(text, allowed: allowed)
            return nil
        } catch {
            return error
        }
    }

    static func featureFormRefusal(_ text: String) -> ServiceError? {
        do throws(ServiceError) {
            _ = try FeatureForm(form: DashboardForm(text, allowed: FeatureForm.fieldNames.union(["preview"])))
            return nil
        } catch {
            return error
        }
    }

    @Test("A form field the form does not have is 422, one sent twice 400; nothing is read from such a form")
    func forms() throws {
        let repeated = Self.formRefusal("key=a&key=b", allowed: ["key"])
        #expect(repeated?.code == .invalidRequest && repeated?.message.hasPrefix("key: given twice") == true)
        let unknown = Self.formRefusal("key=a&remember=1", allowed: ["key"])
        #expect(unknown?.code == .validationFailed && unknown?.message.hasPrefix("remember:") == true)
        #expect(Self.formRefusal("key=%ZZ", allowed: ["key"])?.code == .invalidRequest)
        // What Hummingbird's URLEncodedFormDecoder would read otherwise (why forms are read by
        // hand): bytes that are not UTF-8 are refused, not read as U+FFFD; a bracketed name is a
        // field the form does not have, not a nested one; the first fault in the order sent is
        // the one named, and a badly encoded value names its field, not its text.
        let notUTF8 = Self.formRefusal("description=%FF", allowed: ["description"])
        #expect(notUTF8?.code == .invalidRequest && notUTF8?.message.hasPrefix("description:") == true)
        let bracketed = Self.formRefusal("a[b]=1", allowed: ["a"])
        #expect(bracketed?.code == .validationFailed && bracketed?.message.hasPrefix("a[b]:") == true)
        #expect(Self.formRefusal("x=1&x=2", allowed: ["key"])?.code == .validationFailed, "unknown before repeated")
        let percent = Self.formRefusal("description=100%", allowed: ["description"])
        #expect(percent?.code == .invalidRequest && percent?.message.hasPrefix("description:") == true)
        let form = try DashboardForm("key=a+b%21&other=", allowed: ["key", "other"])
        #expect(form["key"] == "a b!" && form["other"] == "" && form["missing"] == nil)

        let editor = "requires=always&accuracy=any&delivery=locationManager&background=&description=&minAppVersion=&preview=1"
        #expect(Self.featureFormRefusal(editor) == nil)
        #expect(Self.featureFormRefusal(editor + "&enabled=false")?.code == .validationFailed)
        #expect(Self.featureFormRefusal(editor + "&requires=whenInUse")?.code == .invalidRequest)
        #expect(Self.featureFormRefusal(editor + "&services=visits")?.code == .validationFailed, "the old repeated name is not a field")
        #expect(Self.featureFormRefusal(editor + "&services.visits=true&services.visits=true")?.code == .invalidRequest)
        #expect(Self.featureFormRefusal(editor + "&services.visits=yes")?.code == .validationFailed)
        #expect(Self.featureFormRefusal(editor + "&disabled=false")?.code == .validationFailed, "a checkbox sends true or nothing")
        let services = try FeatureForm(form: DashboardForm(editor + "&services.visits=true&services.heading=true", allowed: FeatureForm.fieldNames.union(["preview"])))
        #expect(services.services == ["visits", "heading"])
    }

    @Test("The editor's form sends each field once, and only fields its reader takes")
    func editorSendsEachFieldOnce() throws {
        let page = DashboardRoutes.editorPage(key: "nearby", form: FeatureForm(), isNew: true)
        let html = try DashboardTemplateTests.render(try page.view(for: DashboardTemplateTests.request("/dashboard/features/nearby")), .feature)
        let form = try #require(html.range(of: #"<form class="editor""#).map { html[$0.lowerBound...] }?.components(separatedBy: "</form>").first)
        let names = form.components(separatedBy: #"name=""#).dropFirst().compactMap { $0.split(separator: "\"").first.map(String.init) }
        #expect(names.count == Set(names).count, "\(names)")
        #expect(Set(names).isSubset(of: FeatureForm.fieldNames.union(FeatureForm.pageFields)), "\(names)")
        #expect(Set(names).isSuperset(of: FeatureForm.fieldNames), "\(names)")
    }
}

extension JSONNode.Path {
    /// A path as messages write it (`a[1].c.d`), for comparing in tests.
    static func parsing(_ text: String) -> JSONNode.Path {
        var steps: [Step] = []
        var name = ""
        var index: String?
        func flush() {
            if !name.isEmpty { steps.append(.member(name)) }
            name = ""
        }
        for character in text {
            switch character {
            case ".": flush()
            case "[":
                flush()
                index = ""
            case "]":
                if let digits = index, let value = Int(digits) { steps.append(.element(value)) }
                index = nil
            default:
                if index != nil { index?.append(character) } else { name.append(character) }
            }
        }
        flush()
        return JSONNode.Path(steps)
    }
}
