extension ServerSentEvents {
    /// A comment every 5 s on a quiet stream (`Sink.keepAlive()`): proxies keep it open, and a
    /// client that left is noticed at the write.
    static let keepAliveInterval: Duration = .seconds(5)
}
