/// The pauses between polls of the database while a request waits for something there (an
/// in-flight commit to finish, another holder's lock to go): short at first, since the wait is
/// usually a few milliseconds, then doubling up to `maximum`. A request then costs a few dozen
/// queries in its patience, not one every few milliseconds.
struct PollBackoff: Sequence, IteratorProtocol {
    private var upcoming: Duration
    let maximum: Duration

    init(first: Duration = .milliseconds(5), maximum: Duration = .milliseconds(100)) {
        self.upcoming = first
        self.maximum = maximum
    }

    mutating func next() -> Duration? {
        let pause = upcoming
        upcoming = Swift.min(maximum, upcoming * 2)
        return pause
    }

    /// How many polls a wait of `patience` makes at most.
    static func polls(in patience: Duration, first: Duration = .milliseconds(5), maximum: Duration = .milliseconds(100)) -> Int {
        var backoff = PollBackoff(first: first, maximum: maximum)
        var elapsed = Duration.zero
        var count = 0
        while elapsed < patience, let pause = backoff.next() {
            elapsed += pause
            count += 1
        }
        return count
    }
}
