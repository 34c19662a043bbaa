/// Live (`KeyLog.growing`): a TLS connection waiting for its client to log its secrets, and what
/// came meanwhile (records and direction ends, in arrival order), handled as it came once the
/// secrets are there, or without them once the wait is over its caps: `maxWait` of capture time
/// or `maxHeld` bytes (a client that never logs its secrets, as most apps on a hotspot, costs no
/// more than this). The session owns one and decides when to look at the key log again.
struct TLSKeyWait {
    enum Held {
        case record(TLSRecordReader.Record, Direction)
        case ended(Direction, CloseReason, Timestamp)
    }

    /// What a connection holds at most while it waits for its secrets, and for how long.
    static let maxHeld = 256 << 10
    static let maxWait: Int64 = 1_000_000_000

    private(set) var waiting = false
    private var since: Timestamp = .zero
    private var held: [Held] = []
    private var heldBytes = 0

    /// The wait starts (the ServerHello came, its secrets are not all logged yet).
    mutating func start(at time: Timestamp) {
        waiting = true
        since = time
    }

    /// A record that came while waiting. True when the wait is now over a cap: the caller
    /// stops waiting, with what secrets there are.
    mutating func hold(_ r: TLSRecordReader.Record, from direction: Direction) -> Bool {
        held.append(.record(r, direction))
        heldBytes += (r.body?.count ?? 0) + TLSRecordReader.Record.heldOverhead
        return heldBytes > Self.maxHeld || r.lastByte.nanoseconds - since.nanoseconds > Self.maxWait
    }

    mutating func hold(end direction: Direction, reason: CloseReason, at time: Timestamp) {
        held.append(.ended(direction, reason, time))
    }

    /// The wait is over: what was held, in arrival order, to be handled now.
    mutating func stop() -> [Held] {
        waiting = false
        defer { held = []; heldBytes = 0 }
        return held
    }
}
