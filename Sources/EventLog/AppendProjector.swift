import PostgresClient

/// Runs inside the append transaction, after the streams are locked and versions checked, and
/// before the events are inserted: the place where a projection is updated so that an
/// acknowledged append is already visible to readers of the projection.
///
/// It returns one outcome (JSON text stored with the event, or nil) per event of each stream,
/// or throws `EventLogError.rejected` to roll back the whole batch.
public protocol AppendProjector: Sendable {
    func project(_ appends: [StreamAppend], on connection: PostgresConnection) throws -> [[String?]]
}
