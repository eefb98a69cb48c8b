import CLibPQ
import Foundation

extension PostgresConnection {
    /// Sends the queued statements and `last` in one pipeline (libpq's pipeline mode): one
    /// write, one sync, the server runs them in order, each with its own snapshot as if sent
    /// one by one, and answers them all at once. Returns `last`'s rows. The first statement
    /// that fails is thrown; the server skips the ones after it (the transaction is then
    /// aborted). Statements are prepared as `ship(_:)` says.
    @discardableResult
    func sendQueued(then last: PostgresQuery?) throws(PostgresError) -> PostgresRows {
        try sendQueued(then: last.map { [$0] } ?? []).last ?? PostgresRows(columns: [], values: [], affectedRows: 0)
    }

    /// Sends the queued statements and then `answered` in one pipeline, and returns the rows of
    /// each of `answered`, in order: reads that do not depend on each other cost one round trip
    /// together. The server's answers to statements sent early arrive while libpq is still
    /// writing later ones; libpq reads them into its buffer whenever a write would block, so
    /// large answers cannot stall the pipeline. Statements `flush()` sent before are part of
    /// the same pipeline: their answers are read here first, and the first error among all of
    /// them is thrown.
    func sendQueued(then answered: [PostgresQuery]) throws(PostgresError) -> [PostgresRows] {
        let statements = queued + answered
        queued.removeAll()
        queueFlushes += 1
        try ship(statements)
        return try waiting { () throws(PostgresError) in try readAnswers(answered: answered.count) }
    }

    /// Syncs the open pipeline, reads the answers of every statement sent into it, ends it, and
    /// returns the answers of its last `answered` statements; the first error among them is
    /// thrown once all are read.
    private func readAnswers(answered: Int) throws(PostgresError) -> [PostgresRows] {
        guard PQpipelineSync(handle) == 1 else { throw brokenPipeline() }
        let count = unreadAnswers
        let firstAnswered = count - answered
        unreadAnswers = 0
        var firstError: PostgresError?
        var answers: [PostgresRows] = []
        answers.reserveCapacity(answered)
        for index in 0..<count {
            guard let result = PQgetResult(handle) else { throw brokenPipeline() }
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
        guard let sync = PQgetResult(handle) else { throw brokenPipeline() }
        let synced = PQresultStatus(sync) == PGRES_PIPELINE_SYNC
        PQclear(sync)
        guard synced, PQexitPipelineMode(handle) == 1 else { throw brokenPipeline() }
        pipelineOpen = false
        if let firstError { throw firstError }
        return answers
    }

    /// Sends `statements` into the pipeline, opening it if none is open. A pipeline opened
    /// outside a transaction block first prepares the statements an earlier pipeline had to send
    /// unprepared; then, before it opens, every statement of its own is prepared (a failed
    /// prepare inside a transaction block would abort the transaction, so those wait for one
    /// outside). Into a pipeline already open, a statement not prepared yet goes unprepared
    /// (libpq allows no synchronous prepare there) and is prepared later.
    func ship(_ statements: [PostgresQuery]) throws(PostgresError) {
        if pipelineOpen {
            for statement in statements {
                let types = statement.binds.map(\.typeOID)
                let name = knownPreparedName(for: statement.sql, types: types)
                if name == nil && preparedLater.count < Self.maxPreparedStatements { preparedLater.append((statement.sql, types)) }
                guard send(statement, prepared: name) else { throw brokenPipeline() }
            }
        } else {
            if !preparedLater.isEmpty && PQtransactionStatus(handle) == PQTRANS_IDLE { prepareLater() }
            var names: [String?] = []
            names.reserveCapacity(statements.count)
            for statement in statements {
                names.append(try preparedName(for: statement.sql, types: statement.binds.map(\.typeOID)))
            }
            guard PQenterPipelineMode(handle) == 1 else { throw brokenPipeline() }
            pipelineOpen = true
            for (statement, name) in zip(statements, names) {
                guard send(statement, prepared: name) else { throw brokenPipeline() }
            }
        }
        unreadAnswers += statements.count
    }

    /// Prepares what was sent unprepared into open pipelines. A statement that does not prepare
    /// (it failed when it ran, too) is left to run unprepared; a broken connection shows on
    /// the caller's next statement.
    private func prepareLater() {
        let waiting = preparedLater
        preparedLater.removeAll()
        for (sql, types) in waiting where knownPreparedName(for: sql, types: types) == nil {
            do {
                _ = try preparedName(for: sql, types: types)
            } catch {
                if isBroken { return }
            }
        }
    }

    /// Ends an open pipeline after the transaction's body failed: its answers are read and
    /// dropped (the transaction is rolled back next). A connection that breaks on the way is
    /// marked broken.
    func discardPipeline() {
        guard pipelineOpen else { return }
        _ = try? sendQueued(then: [])
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
    func brokenPipeline() -> PostgresError {
        isBroken = true
        pipelineOpen = false
        unreadAnswers = 0
        return PostgresError(.connectionFailed, message: lastErrorMessage)
    }
}
