/// The appends of one group as a state machine without I/O: which of the group's requests go
/// into the next transaction, and what each failure of a transaction means for them. Requests
/// are named by their index in the group; `GroupCommitter` performs each action and reports
/// what happened as the next event, and answers the requests when the machine says `finish`.
///
/// - All the group's requests are appended in one transaction first.
/// - A request with a refused event (a version or id conflict, a rule) fails alone: it is left out
///   and the others are appended again (refusals are rare, so the common case pays for no
///   savepoints). After the second refusal, what is left is split in halves, in order (a
///   stream's requests keep their order), each appended as a group of its own with the same
///   rules: refusals cost O(n log n) request-appends in a group of n, not one replay of the rest
///   each.
/// - A unique violation (a retry racing another group with the same event id) appends the same
///   requests again, twice at most: the next attempt answers it as a duplicate.
/// - A missing partition (the log outran the partitions created ahead) creates the partitions
///   and appends the same requests again, within the same two retries.
/// - Any other failure of several requests that is not an outage (data the database refused, a
///   defect) appends each request on its own, so that the one at fault fails alone (an
///   isolation).
/// - Otherwise the failure is every pending request's: nothing of the transaction is stored.
struct GroupAttempts<Success> {
    /// What a failed transaction was, as the committer classifies its error.
    enum Failure: Equatable {
        /// The request at `position` of the attempt's requests had an event refused.
        case refused(position: Int)
        /// A unique violation: a retry raced another group with the same event id, or a replay's
        /// rebuild wrote a device state the group inserted (`PostgresError.isAppendRace`).
        case uniqueRace
        /// The log has no partition for the new positions.
        case missingPartition
        /// The database itself failed (unreachable, restarting, out of connections).
        case outage
        /// Anything else.
        case other
    }

    /// What the committer does next.
    enum Action {
        /// Append these requests (indexes into the group, in order) in one transaction; then
        /// report `appended(_:)` or `failed(_:_:)`.
        case append([Int])
        /// Create the log's missing partitions; then report `partitionsCreated()` or
        /// `partitionsFailed(_:)`.
        case createPartitions
        /// Answer each request of the group with its outcome (by index); the group is done.
        case finish([Result<Success, any Error>])
    }

    /// Requests to append together, with the retries they have used.
    private struct Segment {
        var pending: [Int]
        var races = 0
        var refusals = 0
    }

    private var outcomes: [Result<Success, any Error>?]
    /// Segments still to append, the next one last. A segment that splits (halves, or one
    /// request each) is replaced by its parts, so they are appended in the group's order.
    private var segments: [Segment]
    /// Failures of several requests that were then appended one by one.
    private(set) var isolations = 0

    init(requests: Int) {
        outcomes = Array(repeating: nil, count: requests)
        segments = requests > 0 ? [Segment(pending: Array(0..<requests))] : []
    }

    /// The first action: every request in one transaction.
    mutating func start() -> Action {
        next()
    }

    /// The transaction that `.append` asked for committed; `results` in the order of its requests.
    mutating func appended(_ results: [Success]) -> Action {
        let segment = segments.removeLast()
        precondition(results.count == segment.pending.count, "one result per appended request")
        for (index, result) in zip(segment.pending, results) { outcomes[index] = .success(result) }
        return next()
    }

    /// The transaction that `.append` asked for failed with `error`, classified as `failure`;
    /// nothing of it is stored. For `.refused`, `error` is the refused request's own.
    mutating func failed(_ error: any Error, _ failure: Failure) -> Action {
        var segment = segments.removeLast()
        switch failure {
        case .refused(let position):
            outcomes[segment.pending.remove(at: position)] = .failure(error)
            segment.refusals += 1
            if segment.refusals >= 2 && segment.pending.count > 1 {
                // Several refused requests: halves, in order, each with its own budget.
                let middle = segment.pending.count / 2
                segments.append(Segment(pending: Array(segment.pending[middle...])))
                segments.append(Segment(pending: Array(segment.pending[..<middle])))
            } else {
                segments.append(segment)
            }
            return next()
        case .uniqueRace where segment.races < 2:
            segment.races += 1
            segments.append(segment)
            return next()
        case .missingPartition where segment.races < 2:
            segment.races += 1
            segments.append(segment)
            return .createPartitions
        default:
            if segment.pending.count > 1 && failure != .outage {
                // Something of one request failed the whole group: find it by appending each
                // request on its own.
                isolations += 1
                for index in segment.pending.reversed() { segments.append(Segment(pending: [index])) }
            } else {
                for index in segment.pending { outcomes[index] = .failure(error) }
            }
            return next()
        }
    }

    /// The partitions that `.createPartitions` asked for exist: the same requests again.
    mutating func partitionsCreated() -> Action {
        next()
    }

    /// Creating the partitions failed: the requests that were to be appended fail with `error`.
    mutating func partitionsFailed(_ error: any Error) -> Action {
        let segment = segments.removeLast()
        for index in segment.pending { outcomes[index] = .failure(error) }
        return next()
    }

    private mutating func next() -> Action {
        while let last = segments.last, last.pending.isEmpty { segments.removeLast() }
        guard let segment = segments.last else {
            // Every request is answered by the time no segment is left.
            return .finish(outcomes.map { $0 ?? .failure(GroupRequestNotAppended()) })
        }
        return .append(segment.pending)
    }
}

/// The outcome of a request that `GroupAttempts` never set (it sets one for every request).
struct GroupRequestNotAppended: Error {}
