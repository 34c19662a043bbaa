/// TCP's part of a `Connection`, its transport adapter (Zeek's `TCP_Analyzer` with its two
/// `TCP_Endpoint`s): both directions' reassembly (`HalfStream`, by side: 0 is the endpoint of
/// the first packet seen), the handshake as the capture saw it, the server's initial sequence
/// numbers the reassembly checks the client's ACK against, whether a RST came, Zeek-style history
/// letters, and the retransmissions that contradicted delivered bytes. `ConnectionTable` owns
/// and writes it; a QUIC connection has none (its transport state is QUIC's own: `QUICInfo`).
public final class TCPAdapter {
    public let halves: (HalfStream, HalfStream)
    /// The first SYN, the SYN-ACK, and the client's ACK that completed the handshake.
    public internal(set) var syn: Timestamp? = nil
    public internal(set) var synAck: Timestamp? = nil
    public internal(set) var handshakeAck: Timestamp? = nil
    var serverISNPlusOne: UInt32 = 0
    /// SYN/ACKs the last one replaced before the client answered (at most 4): the client's ACK,
    /// or the server's first data, may show that one of them was the one in use.
    var replacedServerISNsPlusOne: [UInt32] = []
    public internal(set) var resetSeen = false
    /// Upper case: originator. S h a d f r g.
    public internal(set) var history: [UInt8] = []
    /// Retransmissions whose bytes differed from those delivered, and the transactions that
    /// held them (cleartext HTTP/1.x on the stream itself: injection suspected).
    var contradictions = Contradictions()

    init() { halves = (HalfStream(), HalfStream()) }

    @inline(__always) public func half(_ side: Int) -> HalfStream { side == 0 ? halves.0 : halves.1 }

    /// Calls `body` with the half of `side` and the other one, without retaining them: choosing
    /// one of two references makes a retained copy (two atomic operations each, for every packet),
    /// so the choice is made between unmanaged references, which the adapter keeps alive for as
    /// long as it lives (`halves` is a constant).
    @inline(__always)
    func withHalves<R>(_ side: Int, _ body: (_ half: HalfStream, _ other: HalfStream) -> R) -> R {
        let unretained = (Unmanaged.passUnretained(halves.0), Unmanaged.passUnretained(halves.1))
        let (mine, theirs) = side == 0 ? unretained : (unretained.1, unretained.0)
        return mine._withUnsafeGuaranteedRef { half in theirs._withUnsafeGuaranteedRef { other in body(half, other) } }
    }

    /// Either direction was picked up after its start (no SYN seen before its first bytes).
    var midstream: Bool { halves.0.midstream || halves.1.midstream }

    /// Either direction delivered bytes: the connection carried data (an eviction says so; a
    /// late copy may repeat its transactions), unlike a SYN flood's or a scan's.
    var deliveredBytes: Bool { halves.0.bytes > 0 || halves.1.bytes > 0 }

    /// Adds a history letter once (Zeek records each event kind once per direction); upper case
    /// for the connection's originator.
    @inline(__always) func record(_ letter: Unicode.Scalar, originator: Bool) {
        let lower = lowerASCII(UInt8(ascii: letter))
        let byte = originator ? lower & ~0x20 : lower
        if !history.contains(byte) { history.append(byte) }
    }
}

/// State of one direction of a TCP connection: where the stream stands and what is buffered.
public final class HalfStream {
    /// True once the stream's origin is known (from a SYN, or the first data seen).
    var started = false
    /// Sequence number of the byte at `nextOffset`.
    var nextSequence: UInt32 = 0
    /// Stream offset of the next byte to deliver; everything before it was delivered or declared a gap.
    public internal(set) var nextOffset: UInt64 = 0
    var pending = OutOfOrderStore()
    var pendingBytes = 0
    /// Offset just past the last data byte, when a FIN was seen.
    var finOffset: UInt64? = nil
    public internal(set) var closed = false
    public internal(set) var sawSYN = false
    /// Nothing of the stream arrived yet (no bytes, gaps or segments held).
    var isUnused: Bool { bytes == 0 && gaps == 0 && pending.isEmpty }
    public internal(set) var midstream = false
    public internal(set) var bytes: UInt64 = 0
    public internal(set) var gapBytes: UInt64 = 0
    public internal(set) var gaps = 0
    public internal(set) var segments: UInt64 = 0
    public internal(set) var retransmittedSegments: UInt64 = 0
    /// The last `historyLength` bytes delivered, in a ring indexed by stream offset (allocated
    /// with the first delivery): a later copy of them that differs is seen (`contradiction`).
    /// The bytes from `historyStart` to `nextOffset` are in it; a gap starts it again.
    private var history: UnsafeMutablePointer<UInt8>? = nil
    private var historyStart: UInt64 = 0
    /// Long enough to hold the end of a forged response that races the real one (a redirect
    /// or a block page is a few hundred bytes); one copy of at most this much per delivery. A
    /// power of two: positions in the ring are offsets masked.
    @inline(__always) static var historyLength: Int { 128 }

    deinit { history?.deallocate() }

    /// Keeps the end of `bytes`, delivered at `nextOffset` (before it advances).
    @inline(__always) func remember(_ bytes: UnsafeRawBufferPointer) {
        let length = Self.historyLength, mask = length - 1
        let h: UnsafeMutablePointer<UInt8>
        if let existing = history { h = existing } else {
            h = UnsafeMutablePointer<UInt8>.allocate(capacity: length)
            history = h
        }
        let n = bytes.count
        let take = min(n, length)
        let at = Int(truncatingIfNeeded: nextOffset &+ UInt64(n - take)) & mask
        let first = min(take, length - at)
        let source = bytes.baseAddress! + (n - take)
        UnsafeMutableRawPointer(h + at).copyMemory(from: source, byteCount: first)
        if take > first { UnsafeMutableRawPointer(h).copyMemory(from: source + first, byteCount: take - first) }
        let end = nextOffset &+ UInt64(n)
        if end >= UInt64(length) && end - UInt64(length) > historyStart { historyStart = end - UInt64(length) }
    }

    /// After a gap: nothing before `nextOffset` is known any more.
    func forgetHistory() { historyStart = nextOffset }

    /// The first offset at which `payload`, a copy of bytes from `start` on that were delivered
    /// already, differs from what was delivered (as far as the history reaches); nil when it
    /// agrees.
    func contradiction(_ payload: UnsafeRawBufferPointer, at start: Int64) -> UInt64? {
        guard let h = history else { return nil }
        let lo = max(start, Int64(historyStart)), hi = min(start + Int64(payload.count), Int64(nextOffset))
        guard lo < hi else { return nil }
        let mask = Self.historyLength - 1
        for o in lo..<hi where payload[Int(o - start)] != h[Int(truncatingIfNeeded: o) & mask] { return UInt64(o) }
        return nil
    }

    /// The stream offset of sequence number `seq`, relative to the next expected byte, so it stays
    /// right across the 2^32 wrap and beyond 4 GiB.
    @inline(__always) func offset(of seq: UInt32) -> Int64 {
        Int64(bitPattern: nextOffset) &+ Int64(Int32(bitPattern: seq &- nextSequence))
    }
}

/// An out-of-order segment copied out of the packet until the hole before it is filled.
struct PendingSegment {
    var offset: UInt64
    var data: [UInt8]
    var arrival: UInt64 = 0
    /// The peer offset its segment acknowledged (`StreamChunk.peerAck`).
    var peerAck: UInt64? = nil
    var end: UInt64 { offset + UInt64(data.count) }
}

/// Where a later copy of a TCP stream's bytes contradicted what was delivered, and which
/// emitted transactions held those bytes: a forged response racing the real one (an injector
/// on the path) or a broken middlebox.
struct Contradictions: Sendable {
    /// A transaction emitted on the connection (cleartext HTTP/1.x on the TCP stream itself):
    /// where its messages lay in each direction's stream. The last `recentKept` are kept.
    struct EmittedRanges: Sendable {
        var sequence: UInt64
        var fromClient: Range<UInt64>?
        var fromServer: Range<UInt64>?
        /// It was flagged `injection_suspected` when emitted: no output needs to hear of it again.
        var flagged = false
        func covers(_ offset: UInt64, from direction: Direction) -> Bool {
            (direction == .fromClient ? fromClient : fromServer)?.contains(offset) ?? false
        }
    }
    private var recentlyEmitted: [EmittedRanges] = []
    private static let recentKept = 16
    /// Offsets where delivered bytes were contradicted that no emitted transaction holds yet
    /// (at most `recentKept`): the transaction emitted later that holds one is flagged.
    private var offsets: [(direction: Direction, offset: UInt64)] = []
    /// Transactions found, after they were emitted, to hold bytes that a later copy contradicted
    /// (by `Transaction.sequence`; not those flagged when emitted already): the HAR and the report
    /// flag them `injection_suspected` at the connection's end; streaming outputs had written
    /// them already (the connection's `retransmission_inconsistency` says so).
    private(set) var transactions: [UInt64] = []

    /// Delivered bytes of `direction` at `offset` were contradicted by a later copy.
    mutating func contradicted(at offset: UInt64, from direction: Direction) {
        if let e = recentlyEmitted.last(where: { $0.covers(offset, from: direction) }) {
            if !e.flagged && !transactions.contains(e.sequence) { transactions.append(e.sequence) }
        } else if offsets.count < Self.recentKept,
                  !offsets.contains(where: { $0.direction == direction && $0.offset == offset }) {
            offsets.append((direction, offset))
        }
    }

    /// Before a transaction is emitted: whether its messages hold contradicted bytes (they are
    /// then no longer waiting for one).
    mutating func holdsContradictedBytes(_ ranges: EmittedRanges) -> Bool {
        guard !offsets.isEmpty else { return false }
        let before = offsets.count
        offsets.removeAll { ranges.covers($0.offset, from: $0.direction) }
        return offsets.count < before
    }

    /// After a transaction was emitted: where its messages lay.
    mutating func emitted(_ ranges: EmittedRanges) {
        if recentlyEmitted.count == Self.recentKept { recentlyEmitted.removeFirst() }
        recentlyEmitted.append(ranges)
    }
}
