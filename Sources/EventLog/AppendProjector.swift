import PostgresClient

/// Runs inside the append transaction, after the streams are locked and versions checked, and
/// before the events are inserted: the place where a projection is updated so that an
/// acknowledged append is already visible to readers of the projection.
///
/// The append reads in one round trip: what the log needs (stored ids, the streams' heads) and
/// the projection's own read (`read(_:)`), whose rows `project` then gets. The projection's
/// writes go out with the log's inserts and COMMIT (`PostgresConnection.send`), so a group of
/// new events costs two round trips in all.
///
/// `project` returns one outcome (JSON text stored with the event, or nil) per event of each
/// stream, or throws `EventLogError.rejected` to roll back the whole batch.
public protocol AppendProjector: Sendable {
    /// The statement reading what `project` needs of these streams (all of the batch's, locked),
    /// or nil when it reads nothing. Called once at the start of every attempt of the append
    /// (`EventLog.append` runs the transaction again after a race): a projector that keeps
    /// what it projected forgets an earlier, rolled-back attempt's here.
    func read(_ streams: [StreamKey]) -> PostgresQuery?
    /// `read` holds the rows of `read(_:)`'s statement (nil when it had none).
    func project(_ appends: [StreamAppend], read: PostgresRows?, on connection: PostgresConnection) throws -> [[String?]]
}
