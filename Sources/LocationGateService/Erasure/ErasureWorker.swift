import Logging
import ServiceLifecycle

/// Every server's part of erasure: it records that the process is alive, performs the erasures
/// requested (phase 1, a page per step, the apps taking turns, whichever process gets there
/// first), and marks done those every live process has acknowledged (phase 2).
///
/// It runs no ANALYZE: the columns of ids and client text keep no statistics (migration 022),
/// and a statement that held a transaction id for as long as ANALYZE samples the log would
/// hold back every app's change feed meanwhile (SPEC §5, "Resources").
///
/// It looks for work as soon as it is woken (`ErasureSignal`: a request, a notification, a
/// resync), every `interval` while an erasure is under way, and otherwise only every
/// `idleCheck`: an idle server costs the database one heartbeat a second, not four queries.
/// While there is work it takes steps for at most `interval` at a time, then completes what is
/// done, so that a flood of requests or a very large person never keeps the small erasures
/// from finishing. The heartbeat runs in a task of its own: a step waiting for a lock never
/// makes this process look gone.
public struct ErasureWorker: Service {
    let erasure: ErasureCapability
    let logger: Logger
    /// How often it looks for work while there is some, and how long it takes steps at a time;
    /// an erasure is done within a few of these.
    let interval: Duration
    /// How often an idle worker looks anyway (a notification lost with its connection).
    static let idleCheck: Duration = .seconds(5)
    /// How often it records that this process is alive (`server_processes`).
    static let heartbeat: Duration = .seconds(1)

    public init(erasure: ErasureCapability, logger: Logger, interval: Duration = .milliseconds(250)) {
        self.erasure = erasure
        self.logger = logger
        self.interval = interval
    }

    public func run() async throws {
        await cancelWhenGracefulShutdown {
            // The heartbeat keeps its own pace: a step that waits for a lock must not make this
            // process look gone to the others (they would stop waiting for its acknowledgements).
            await withTaskGroup(of: Void.self) { group in
                group.addTask { await beat() }
                group.addTask { await work() }
                await group.waitForAll()
            }
        }
    }

    /// Records that this process is alive, every `heartbeat`.
    private func beat() async {
        // A process that just started holds nothing erased: it counts as resynced.
        var first = true
        while !Task.isCancelled {
            do {
                try await erasure.heartbeat(resynced: first)
                first = false
            } catch where Task.isCancelled {
                break
            } catch {
                logger.warning("erasure heartbeat failed; retrying", metadata: ["error": "\(ErasureCapability.erasureLogText(error))"])
            }
            try? await Task.sleep(for: Self.heartbeat)
        }
    }

    /// Takes steps and completes erasures, as long as the task runs.
    private func work() async {
        var lastCheck = ContinuousClock.now - Self.idleCheck
        var underWay = true
        while !Task.isCancelled {
            // Steps are left that the time allowed did not reach: go on without waiting.
            var more = false
            do {
                let woken = erasure.erasureSignal.take()
                if woken || underWay || ContinuousClock.now - lastCheck >= Self.idleCheck {
                    lastCheck = .now
                    let until = ContinuousClock.now + interval
                    while try await erasure.performNextErasure() {
                        if ContinuousClock.now >= until {
                            more = true
                            break
                        }
                    }
                    try await erasure.completeErasures()
                    let pending = try await erasure.erasuresUnderWay()
                    underWay = more || pending
                }
            } catch where Task.isCancelled {
                break
            } catch {
                more = false
                logger.warning("erasure work failed; retrying", metadata: ["error": "\(ErasureCapability.erasureLogText(error))"])
            }
            if more {
                await Task.yield()
                continue
            }
            // Until woken, or the next look: `interval` while an erasure is under way, else the
            // heartbeat's pace.
            await erasure.erasureSignal.wait(upTo: underWay ? interval : Self.heartbeat)
        }
    }
}
