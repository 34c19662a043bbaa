/// Packets a QUIC connection cannot read yet, copied and kept in arrival order: 0-RTT and other
/// packets that came before the ServerHello named the suite, and, live, Handshake and 1-RTT
/// packets whose secrets the key log has not written yet (the wait: `waitingSince`, at most
/// `TLSKeyWait.maxWait` of capture time, then `gaveUp`). At most `maxBytes` of packets; the
/// session replays them, in order, once it can read them.
struct QUICHeldPackets {
    static let maxBytes = 1 << 20

    typealias Item = (bytes: [UInt8], at: Timestamp, direction: Direction)
    private var items: [Item] = []
    private var bytes = 0
    /// Live: since when packets wait for the key log's secrets (nil: not waiting).
    var waitingSince: Timestamp? = nil
    /// Live: the wait was given up (its packets were counted undecryptable, `quic_keys_late`).
    var gaveUp = false
    /// What is held became readable (the ServerHello named the suite, a key-log search found the
    /// secrets): replayed once the current datagram is done.
    var replayDue = false
    /// What was held is being read again: its packets were counted when they came.
    private(set) var replaying = false

    var isEmpty: Bool { items.isEmpty }
    var count: Int { items.count }

    /// Keeps a copy of `packet`; false when it would pass `maxBytes` (not kept).
    mutating func hold(_ packet: UnsafeRawBufferPointer, at ts: Timestamp, from direction: Direction) -> Bool {
        guard bytes + packet.count <= Self.maxBytes else { return false }
        bytes += packet.count
        items.append((Array(packet), ts, direction))
        return true
    }

    /// Everything held, in arrival order, to be read again: `replaying` until `endReplay`.
    mutating func startReplay() -> [Item] {
        replayDue = false
        replaying = true
        return take()
    }

    mutating func endReplay() { replaying = false }

    /// Everything held, in arrival order; nothing is held after.
    mutating func take() -> [Item] {
        defer { items = []; bytes = 0 }
        return items
    }

    /// What became of a packet held for the key log's secrets.
    enum Waited {
        case held
        /// Not kept: `maxBytes` are held.
        case full
        /// The wait is over: `packets` held were dropped (this one with them).
        case gaveUp(packets: Int)
    }

    /// Live: `packet` kept while the wait for the key log's secrets lasts — `TLSKeyWait.maxWait`
    /// of capture time from the first packet held for them; past it, the wait is given up and
    /// what was held is dropped.
    mutating func waitForKeys(_ packet: UnsafeRawBufferPointer, at ts: Timestamp, from direction: Direction) -> Waited {
        let since = waitingSince ?? ts
        waitingSince = since
        guard ts.nanoseconds - since.nanoseconds <= TLSKeyWait.maxWait else {
            gaveUp = true
            waitingSince = nil
            defer { _ = take() }
            return .gaveUp(packets: items.count)
        }
        return hold(packet, at: ts, from: direction) ? .held : .full
    }
}
