import CLibPQ
import Dispatch
import Foundation
import Logging

/// One libpq connection. Its methods block: they are called only by the one owner of a lease,
/// on a thread of the client's thread pool (`PostgresClient.withConnection`), never on the
/// cooperative pool or an event loop. A `PGconn` is never used by two threads at once: the pool
/// hands each connection to one lease at a time.
public final class PostgresConnection: @unchecked Sendable {
    let handle: OpaquePointer
    let logger: Logger
    /// Set when libpq reports the connection broken; the pool then closes it instead of reusing it.
    public internal(set) var isBroken = false
    private var transactionDepth = 0
    /// Statements of the open transaction not sent yet (`send(_:)`, BEGIN, COMMIT): they go to
    /// the server in one pipeline with the next statement whose answer is needed.
    var queued: [PostgresQuery] = []
    /// How many times the queue was sent: tells a transaction whether its queued BEGIN (or
    /// SAVEPOINT) has reached the server.
    var queueFlushes = 0
    /// A pipeline is open: `flush()` sent statements whose answers are not read yet. The next
    /// statement whose answer is needed (or COMMIT) ends it and reads them all.
    var pipelineOpen = false
    /// Statements sent into the open pipeline, answers not read yet.
    var unreadAnswers = 0
    /// Nanoseconds this connection has spent waiting for the server's answers (from sending a
    /// round trip's last statement to reading its last answer, a statement's preparation
    /// included): a caller that reads it before and after its work splits the work's time into
    /// the database's and its own. Statements `flush()` sent run while the caller works: that
    /// time is the caller's, unless it is still running when the caller waits.
    public private(set) var waitingNanoseconds: UInt64 = 0
    /// Statements sent unprepared into an open pipeline (a synchronous prepare is not allowed
    /// there): they are prepared before the next pipeline that starts outside a transaction.
    var preparedLater: [(sql: String, types: [UInt32])] = []

    /// Connects with `PQconnectdbParams` and sets the session to UTC and ISO dates, which the
    /// text decoders rely on. Blocks.
    public init(configuration: PostgresConfiguration, logger: Logger) throws(PostgresError) {
        let pairs = configuration.keywordsAndValues
        let keywords = pairs.map { strdup($0.0) }
        let values = pairs.map { strdup($0.1) }
        defer {
            keywords.forEach { free($0) }
            values.forEach { free($0) }
        }
        var keywordPointers = keywords.map { UnsafePointer<CChar>($0) } + [nil]
        var valuePointers = values.map { UnsafePointer<CChar>($0) } + [nil]
        guard let connection = PQconnectdbParams(&keywordPointers, &valuePointers, 1) else {
            throw PostgresError(.connectionFailed, message: "libpq could not allocate a connection")
        }
        guard PQstatus(connection) == CONNECTION_OK else {
            let message = String(cString: PQerrorMessage(connection)).trimmingCharacters(in: .whitespacesAndNewlines)
            PQfinish(connection)
            throw PostgresError(.connectionFailed, message: message)
        }
        self.handle = connection
        self.logger = logger
        try execute("SET TimeZone = 'UTC'; SET DateStyle = 'ISO, YMD'")
    }

    deinit {
        PQfinish(handle)
    }

    /// Runs one statement with its parameters (text format) and returns its rows.
    ///
    /// The statement is prepared on this connection the first time its text (and parameter
    /// types) is seen, and executed by name after that: the bulk statements of an append are
    /// long `unnest` queries, and parsing and analysing them again for every small group commit
    /// cost the server as much as running them. Up to `maxPreparedStatements` are kept; a
    /// statement beyond that runs unprepared.
    @discardableResult
    public func query(_ query: PostgresQuery) throws(PostgresError) -> PostgresRows {
        try refuseNUL(query)
        // Statements queued by the transaction go first, in the same round trip.
        if !queued.isEmpty || pipelineOpen { return try sendQueued(then: query) }
        let name = try preparedName(for: query.sql, types: query.binds.map(\.typeOID))
        let result = withParameters(of: query) { count, types, values in
            waiting {
                if let name {
                    PQexecPrepared(handle, name, count, values, nil, nil, 0)
                } else {
                    PQexecParams(handle, query.sql, count, types, values, nil, nil, 0)
                }
            }
        }
        return try consume(result)
    }

    /// Runs one statement and hands each row to `body` where it lies in libpq's result, without
    /// copying the result into `PostgresRows`: for readers of many short rows (a feature
    /// preview's count rows, a million at a million devices), where copying every value into a
    /// `String` costs more than the reading. A `PostgresResultRow` is valid only during its call.
    /// The statement is not prepared, and runs after the transaction's queued statements as
    /// `query(_:)` does.
    public func forEachRow(_ query: PostgresQuery, _ body: (PostgresResultRow) throws -> Void) throws {
        try refuseNUL(query)
        if !queued.isEmpty || pipelineOpen { _ = try sendQueued(then: [PostgresQuery]()) }
        let result = withParameters(of: query) { count, types, values in
            waiting { PQexecParams(handle, query.sql, count, types, values, nil, nil, 0) }
        }
        guard let result else { try consume(nil) ; return }
        defer { PQclear(result) }
        switch PQresultStatus(result) {
        case PGRES_TUPLES_OK, PGRES_COMMAND_OK, PGRES_EMPTY_QUERY:
            let columns = PQnfields(result)
            for row in 0..<PQntuples(result) {
                try body(PostgresResultRow(result: result, row: row, columns: columns))
            }
        default:
            throw failure(of: result)
        }
    }

    /// Runs several statements in one round trip (after the transaction's queued ones) and
    /// returns each one's rows, in order: for reads that do not depend on each other's answers.
    /// They run in order, each with its own snapshot, as if sent one by one; the first that
    /// fails is thrown, and inside a transaction it aborts the transaction as it would alone.
    public func query(_ queries: [PostgresQuery]) throws(PostgresError) -> [PostgresRows] {
        for query in queries { try refuseNUL(query) }
        guard !queries.isEmpty || !queued.isEmpty || pipelineOpen else { return [] }
        return try sendQueued(then: queries)
    }

    /// Calls `body` with the statement's parameters as libpq takes them: their count, type
    /// OIDs and NUL-terminated texts (NULL for a null), valid only during the call.
    func withParameters<T>(
        of statement: PostgresQuery,
        _ body: (Int32, UnsafePointer<UInt32>?, UnsafePointer<UnsafePointer<CChar>?>?) -> T
    ) -> T {
        let texts = statement.binds.map { bind in bind.text.map { strdup($0) } ?? nil }
        defer { texts.forEach { free($0) } }
        let types = statement.binds.map(\.typeOID)
        let pointers = texts.map { UnsafePointer<CChar>($0) }
        return types.withUnsafeBufferPointer { typeBuffer in
            pointers.withUnsafeBufferPointer { valueBuffer in
                body(Int32(statement.binds.count), typeBuffer.baseAddress, valueBuffer.baseAddress)
            }
        }
    }

    /// Queues a statement whose rows nobody reads (a write inside a transaction): it is sent
    /// with the transaction's next statement that needs an answer, or with its COMMIT, in one
    /// pipeline, so that a transaction of many writes costs one round trip instead of one per
    /// statement. Its error, if any, is thrown by that later call, and fails the transaction
    /// as it would have here. Outside a transaction the statement runs at once.
    public func send(_ query: PostgresQuery) throws(PostgresError) {
        guard transactionDepth > 0 else {
            try self.query(query)
            return
        }
        try refuseNUL(query)
        queued.append(query)
    }

    /// Sends the statements queued so far (`send(_:)`) to the server now, without waiting for
    /// their answers: the server runs them while the caller builds the next ones, instead of
    /// waiting idle for the whole transaction's statements (an append sends its stream heads
    /// before it projects).
    /// Their answers, and the first error among them, come with the transaction's next
    /// statement that needs an answer, or with its COMMIT, as queued statements' do. Outside a
    /// transaction, or with nothing queued, it does nothing.
    public func flush() throws(PostgresError) {
        guard transactionDepth > 0, !queued.isEmpty else { return }
        let statements = queued
        queued.removeAll()
        queueFlushes += 1
        try ship(statements)
        guard PQflush(handle) == 0 else { throw brokenPipeline() }
    }

    /// libpq reads text parameters up to their first NUL: a value with one would be stored cut
    /// short without an error. Callers validate input before it gets here, so this is a defect,
    /// refused loudly rather than stored altered.
    private func refuseNUL(_ query: PostgresQuery) throws(PostgresError) {
        for (number, bind) in query.binds.enumerated() where bind.text.map(Self.holdsNUL) == true {
            logger.error("refused a parameter holding a NUL byte", metadata: ["parameter": "$\(number + 1)"])
            throw PostgresError(.invalidParameter, message: "parameter $\(number + 1) holds a NUL byte")
        }
    }

    /// `memchr` over the UTF-8 bytes: a group's array parameters are kilobytes, and scanning
    /// them byte by byte through `String.UTF8View` was 1% of a busy server's time.
    private static func holdsNUL(_ text: String) -> Bool {
        var text = text
        return text.withUTF8 { bytes in
            guard let base = bytes.baseAddress else { return false }
            return memchr(base, 0, bytes.count) != nil
        }
    }

    /// Statements prepared on this connection, by text and parameter types.
    private var prepared: [PreparedKey: String] = [:]
    public static let maxPreparedStatements = 256

    private struct PreparedKey: Hashable {
        var sql: String
        var types: [UInt32]
    }

    /// The prepared statement's name, preparing it first if needed; nil when the cache is full.
    func preparedName(for sql: String, types: [UInt32]) throws(PostgresError) -> String? {
        let key = PreparedKey(sql: sql, types: types)
        if let name = prepared[key] { return name }
        guard prepared.count < Self.maxPreparedStatements else { return nil }
        let name = "locgate_\(prepared.count + 1)"
        let result = waiting {
            types.withUnsafeBufferPointer { typeBuffer in
                PQprepare(handle, name, sql, Int32(types.count), typeBuffer.baseAddress)
            }
        }
        try consume(result)
        prepared[key] = name
        return name
    }

    /// Runs `body`, which waits for the server, and adds its time to `waitingNanoseconds`.
    func waiting<T, Failure: Error>(_ body: () throws(Failure) -> T) throws(Failure) -> T {
        let started = DispatchTime.now().uptimeNanoseconds
        defer { waitingNanoseconds &+= DispatchTime.now().uptimeNanoseconds &- started }
        return try body()
    }

    /// The prepared statement's name, if it is prepared on this connection already.
    func knownPreparedName(for sql: String, types: [UInt32]) -> String? {
        prepared[PreparedKey(sql: sql, types: types)]
    }

    /// Runs trusted SQL text that may hold several statements (migrations, session set-up).
    /// Never pass input here: it takes no parameters.
    public func execute(_ script: String) throws(PostgresError) {
        if !queued.isEmpty || pipelineOpen { try sendQueued(then: nil) }
        try consume(waiting { PQexec(handle, script) })
    }

    /// Runs `body` in a transaction: COMMIT when it returns, ROLLBACK when it throws. Nested calls
    /// use savepoints. BEGIN is queued, not sent: it reaches the server with the body's first
    /// statement, and COMMIT with the statements the body queued (`send(_:)`). A failed COMMIT
    /// (or a queued statement that failed with it) is thrown as it is: the transaction is over,
    /// rolled back, and the connection is marked broken only if its state is in doubt.
    public func transaction<T>(_ body: (PostgresConnection) throws -> T) throws -> T {
        let savepoint = transactionDepth > 0 ? "locgate_\(transactionDepth)" : nil
        let start = (flushes: queueFlushes, index: queued.count)
        queued.append(PostgresQuery(unsafeSQL: savepoint.map { "SAVEPOINT \($0)" } ?? "BEGIN"))
        transactionDepth += 1
        let value: T
        do {
            value = try body(self)
        } catch {
            transactionDepth -= 1
            if start.flushes == queueFlushes {
                // Nothing of this transaction reached the server: forget it.
                queued.removeSubrange(start.index...)
            } else {
                queued.removeAll()
                // Statements the body flushed are answered first, whatever their answers.
                discardPipeline()
                do {
                    try execute(savepoint.map { "ROLLBACK TO SAVEPOINT \($0)" } ?? "ROLLBACK")
                } catch let rollbackError {
                    logger.error("rollback failed", metadata: ["error": "\(String(reflecting: rollbackError))"])
                    isBroken = true
                }
            }
            throw error
        }
        transactionDepth -= 1
        if start.flushes == queueFlushes && queued.count == start.index + 1 {
            // The body ran no statement: there is nothing to commit.
            queued.removeLast()
            return value
        }
        queued.append(PostgresQuery(unsafeSQL: savepoint.map { "RELEASE SAVEPOINT \($0)" } ?? "COMMIT"))
        // A savepoint's RELEASE goes with the outer transaction's next statement.
        guard savepoint == nil else { return value }
        // A transaction that cannot commit: a statement of it failed and the body went on (the
        // server answers COMMIT in an aborted transaction with ROLLBACK, as a success), or a
        // savepoint could not be undone. It is rolled back, and thrown, not returned as committed.
        if isBroken || (!pipelineOpen && PQtransactionStatus(handle) == PQTRANS_INERROR) {
            queued.removeAll()
            discardPipeline()
            if !isBroken {
                do { try execute("ROLLBACK") } catch { isBroken = true }
            }
            throw PostgresError(.server, message: "the transaction was rolled back: a statement in it failed")
        }
        do {
            try sendQueued(then: nil)
        } catch {
            // A statement before COMMIT failed (COMMIT was then skipped, the transaction is
            // aborted), or COMMIT itself failed (the server rolled back). Anything else: do not
            // reuse the connection.
            switch PQtransactionStatus(handle) {
            case PQTRANS_IDLE:
                break
            case PQTRANS_INERROR:
                do { try execute("ROLLBACK") } catch { isBroken = true }
            default:
                isBroken = true
            }
            throw error
        }
        return value
    }

    /// Whether an idle connection is still usable, checked without a round trip: a server that
    /// terminated the session (a restart, `pg_terminate_backend`) has sent an error and closed
    /// the socket, which is then readable. An idle pooled connection expects nothing (pool
    /// connections never LISTEN), so anything readable condemns it: at worst a harmless
    /// message costs one reconnect. One `poll(2)` with no wait.
    public func isUsable() -> Bool {
        guard !isBroken, PQstatus(handle) == CONNECTION_OK else { return false }
        var descriptor = pollfd(fd: PQsocket(handle), events: Int16(POLLIN), revents: 0)
        guard poll(&descriptor, 1, 0) > 0 else { return true }
        isBroken = true
        return false
    }

    /// Sends `SELECT 1` and waits at most `timeout` for its answer, without blocking longer:
    /// the LISTEN connection's heartbeat, which notices a connection that died silently.
    /// Notifications that arrive meanwhile are kept for `consumeNotifications()`.
    func ping(timeout: Duration) throws(PostgresError) {
        guard PQsendQuery(handle, "SELECT 1") == 1 else {
            isBroken = true
            throw PostgresError(.connectionFailed, message: lastErrorMessage)
        }
        let deadline = ContinuousClock.now + timeout
        while true {
            guard PQconsumeInput(handle) == 1 else {
                isBroken = true
                throw PostgresError(.connectionFailed, message: lastErrorMessage)
            }
            if PQisBusy(handle) == 0 {
                var failure: PostgresError?
                while let result = PQgetResult(handle) {
                    if PQresultStatus(result) != PGRES_TUPLES_OK {
                        failure = PostgresError(.connectionFailed, message: lastErrorMessage)
                    }
                    PQclear(result)
                }
                if let failure {
                    isBroken = true
                    throw failure
                }
                return
            }
            let left = deadline - ContinuousClock.now
            guard left > .zero else {
                isBroken = true
                throw PostgresError(.connectionFailed, message: "no answer to the heartbeat within \(timeout)")
            }
            var descriptor = pollfd(fd: PQsocket(handle), events: Int16(POLLIN), revents: 0)
            let milliseconds = Int32(clamping: left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000 + 1)
            _ = poll(&descriptor, 1, milliseconds)
        }
    }

    /// The socket, for waiting on notifications.
    var socket: Int32 { PQsocket(handle) }

    /// Reads what the server sent and returns the notifications it held (LISTEN/NOTIFY).
    func consumeNotifications(ignoring filter: NotificationFilter? = nil) throws(PostgresError) -> [PostgresNotification] {
        guard PQconsumeInput(handle) == 1 else {
            isBroken = true
            throw PostgresError(.connectionFailed, message: lastErrorMessage)
        }
        var notifications: [PostgresNotification] = []
        while let notify = PQnotifies(handle) {
            if let filter, filter.matches(channel: notify.pointee.relname, payload: notify.pointee.extra) {
                PQfreemem(notify)
                continue
            }
            let channel = String(cString: notify.pointee.relname)
            let payload = String(cString: notify.pointee.extra)
            notifications.append(PostgresNotification(channel: channel, payload: payload))
            PQfreemem(notify)
        }
        return notifications
    }

    var lastErrorMessage: String {
        String(cString: PQerrorMessage(handle)).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Copies a result out, clears it, and turns an error result into a typed error.
    @discardableResult
    func consume(_ result: OpaquePointer?) throws(PostgresError) -> PostgresRows {
        guard let result else {
            if PQstatus(handle) != CONNECTION_OK { isBroken = true }
            throw PostgresError(.connectionFailed, message: lastErrorMessage)
        }
        defer { PQclear(result) }
        switch PQresultStatus(result) {
        case PGRES_TUPLES_OK, PGRES_COMMAND_OK, PGRES_EMPTY_QUERY:
            let rowCount = Int(PQntuples(result))
            let columnCount = Int(PQnfields(result))
            var columns: [String] = []
            columns.reserveCapacity(columnCount)
            for column in 0..<columnCount {
                columns.append(String(cString: PQfname(result, Int32(column))))
            }
            var values: [[String?]] = []
            values.reserveCapacity(rowCount)
            for row in 0..<rowCount {
                var rowValues: [String?] = []
                rowValues.reserveCapacity(columnCount)
                for column in 0..<columnCount {
                    if PQgetisnull(result, Int32(row), Int32(column)) == 1 {
                        rowValues.append(nil)
                    } else {
                        rowValues.append(String(cString: PQgetvalue(result, Int32(row), Int32(column))))
                    }
                }
                values.append(rowValues)
            }
            let affected = Int(String(cString: PQcmdTuples(result))) ?? 0
            return PostgresRows(columns: columns, values: values, affectedRows: affected)
        default:
            throw failure(of: result)
        }
    }

    /// The typed error of a failed result, marking the connection broken when its session is over.
    private func failure(of result: OpaquePointer) -> PostgresError {
            func field(_ code: Int32) -> String? {
                PQresultErrorField(result, code).map { String(cString: $0) }
            }
            if PQstatus(handle) != CONNECTION_OK { isBroken = true }
            let sqlState = field(Int32(UInt8(ascii: "C")))
            // A terminated session (57P01 after a restart or pg_terminate_backend) or a
            // connection exception: the session is over even if libpq has not seen EOF yet.
            if let sqlState, sqlState.hasPrefix("08") || sqlState.hasPrefix("57P") { isBroken = true }
            return PostgresError(
                sqlState == nil && isBroken ? .connectionFailed : .server,
                sqlState: sqlState,
                message: field(Int32(UInt8(ascii: "M"))) ?? lastErrorMessage,
                detail: field(Int32(UInt8(ascii: "D"))),
                constraint: field(Int32(UInt8(ascii: "n"))))
    }
}

/// A NOTIFY received on a LISTEN connection.
public struct PostgresNotification: Sendable, Hashable {
    public var channel: String
    public var payload: String
}
