import CLibPQ
import Foundation

extension PostgresConnection {
    /// Sends the queued statements and `last` in one pipeline (libpq's pipeline mode): one
    /// write, one sync, the server runs them in order, each with its own snapshot as if sent
    /// one by one, and answers them all at once. Returns `last`'s rows. The first statement
    /// that fails is thrown; the server skips the ones after it (the transaction is then
    /// aborted). Statements are prepared first, outside the pipeline, as `query(_:)` does.
    @discardableResult
    func sendQueued(then last: PostgresQuery?) throws(PostgresError) -> PostgresRows {
        try sendQueued(then: last.map { [$0] } ?? []).last ?? PostgresRows(columns: [], values: [], affectedRows: 0)
    }

    /// Sends the queued statements and then `answered` in one pipeline, and returns the rows of
    /// each of `answered`, in order: reads that do not depend on each other cost one round trip
    /// together. The server's answers to statements sent early arrive while libpq is still
    /// writing later ones; libpq reads them into its buffer whenever a write would block, so
    /// large answers cannot stall the pipeline.
    func sendQueued(then answered: [PostgresQuery]) throws(PostgresError) -> [PostgresRows] {
        let statements = queued + answered
        let firstAnswered = queued.count
        queued.removeAll()
        queueFlushes += 1
        var names: [String?] = []
        names.reserveCapacity(statements.count)
        for statement in statements {
            names.append(try preparedName(for: statement.sql, types: statement.binds.map(\.typeOID)))
        }
        guard PQenterPipelineMode(handle) == 1 else { throw broken() }
        for (statement, name) in zip(statements, names) {
            guard send(statement, prepared: name) else { throw broken() }
        }
        guard PQpipelineSync(handle) == 1 else { throw broken() }
        var firstError: PostgresError?
        var answers: [PostgresRows] = []
        answers.reserveCapacity(answered.count)
        for index in statements.indices {
            guard let result = PQgetResult(handle) else { throw broken() }
            if PQresultStatus(result) == PGRES_PIPELINE_ABORTED {
                PQclear(result)
            } else {
                do {
                    let answer = try consume(result)
                    if index >= firstAnswered { answers.append(answer) }
                } catch {
                    firstError = firstError ?? error
                }
            }
            // Each statement's results end with a NULL.
            while let extra = PQgetResult(handle) { PQclear(extra) }
        }
        guard let sync = PQgetResult(handle) else { throw broken() }
        let synced = PQresultStatus(sync) == PGRES_PIPELINE_SYNC
        PQclear(sync)
        guard synced, PQexitPipelineMode(handle) == 1 else { throw broken() }
        if let firstError { throw firstError }
        return answers
    }

    /// Sends one statement into the pipeline, by name when prepared.
    private func send(_ statement: PostgresQuery, prepared name: String?) -> Bool {
        withParameters(of: statement) { count, types, values in
            if let name {
                PQsendQueryPrepared(handle, name, count, values, nil, nil, 0) == 1
            } else {
                PQsendQueryParams(handle, statement.sql, count, types, values, nil, nil, 0) == 1
            }
        }
    }

    /// The connection failed mid-pipeline: it is not reused.
    private func broken() -> PostgresError {
        isBroken = true
        return PostgresError(.connectionFailed, message: lastErrorMessage)
    }
}
