import LocationGateService

/// A database reading that `/readyz` and `/metrics` report, taken at most once per `interval`
/// however often they are asked: both need no key, so a flood of them must not take the
/// pool's connections from gates and appends. Concurrent callers share the reading in flight;
/// a failure is remembered for the interval too.
actor CachedReading<Value: Sendable> {
    private let read: @Sendable () async throws -> Value
    private let interval: Duration
    private let clock: ElapsedTime
    private var last: (at: Duration, result: Result<Value, any Error>)?
    private var inFlight: Task<Result<Value, any Error>, Never>?

    init(interval: Duration = .seconds(1), clock: any Clock<Duration> = ContinuousClock(), _ read: @escaping @Sendable () async throws -> Value) {
        self.read = read
        self.interval = interval
        self.clock = ElapsedTime(clock)
    }

    func value() async throws -> Value {
        if let last, clock.now - last.at < interval { return try last.result.get() }
        if let inFlight { return try await inFlight.value.get() }
        let read = self.read
        let task = Task { () -> Result<Value, any Error> in
            do { return .success(try await read()) } catch { return .failure(error) }
        }
        inFlight = task
        let result = await task.value
        last = (clock.now, result)
        inFlight = nil
        return try result.get()
    }
}
