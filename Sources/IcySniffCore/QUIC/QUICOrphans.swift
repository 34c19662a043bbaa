/// Datagrams that matched no QUIC connection yet (a server's Initial or Handshake, or a 1-RTT
/// packet, that overtook the client's first Initial), copied and kept in arrival order for
/// `lifetime` of capture time, at most `maxCount` of them and `maxBytes`. They are not counted as
/// QUIC unless a connection takes them; what becomes of one dropped is the tracker's (a key-log
/// search, or a count). Also the address pairs whose long headers matched nothing, and those of
/// connections that ended: their short headers are QUIC too (`keepsShortHeader`, `verdict`).
struct QUICOrphans {
    static let maxCount = 64
    static let maxBytes = 128 << 10
    /// How long an orphan waits for its connection (capture time).
    static let lifetime: Int64 = 2_000_000_000

    /// What an orphan looked like: an Initial that did not decrypt with the keys its own DCID
    /// gives (a client's first Initial, damaged or not QUIC; or a server's that overtook the
    /// client's), another long header, or a short header.
    enum Kind { case initial, longHeader, shortHeader }

    typealias Orphan = (bytes: [UInt8], source: Endpoint, destination: Endpoint, at: Timestamp, kind: Kind)
    private var items: [Orphan] = []
    private var bytes = 0
    /// Address pairs of long headers kept here (bounded: started again when full).
    private var unreadablePairs: Set<QUICRoutes.AddressPair> = []

    var isEmpty: Bool { items.isEmpty }

    func longHeadersUnmatched(between x: Endpoint, _ y: Endpoint) -> Bool {
        !unreadablePairs.isEmpty && unreadablePairs.contains(QUICRoutes.AddressPair(x, y))
    }

    /// Address pairs of the last connections the tracker ended with more to come (idle,
    /// evicted, at a capture set's break): a short header on one later is its connection's,
    /// which a short header cannot open again. Bounded: only the newest are remembered.
    private var endedPairs = BoundedLRU<QUICRoutes.AddressPair, Void>(capacity: 1024)

    mutating func connectionEnded(between x: Endpoint, _ y: Endpoint) {
        endedPairs.set(QUICRoutes.AddressPair(x, y), ())
    }

    /// Whether a short header that matched no connection is kept a moment: its fixed bit set,
    /// or, greased (RFC 9287), on a pair whose long headers matched nothing or whose connection
    /// ended.
    func keepsShortHeader(_ first: UInt8, between x: Endpoint, _ y: Endpoint) -> Bool {
        first & 0x40 != 0 || longHeadersUnmatched(between: x, y) || endedPairs.peek(QUICRoutes.AddressPair(x, y)) != nil
    }

    /// What a short header no connection took is counted as: `quic_datagram_after_end` on the
    /// pair of a connection that ended, else `quic_datagram_unmatched` on port 443 or a pair an
    /// unmatched long header used; nil elsewhere (any UDP datagram may have its second bit set).
    func verdict(shortHeader o: Orphan) -> Weird? {
        if endedPairs.peek(QUICRoutes.AddressPair(o.source, o.destination)) != nil { return .quicDatagramAfterEnd }
        if o.source.port == 443 || o.destination.port == 443 || longHeadersUnmatched(between: o.source, o.destination) {
            return .quicDatagramUnmatched
        }
        return nil
    }

    /// The oldest orphan, taken out.
    mutating func takeFirst() -> Orphan? {
        guard !items.isEmpty else { return nil }
        let o = items.removeFirst()
        bytes -= o.bytes.count
        return o
    }

    /// The oldest orphan when it waited past `lifetime` at `now`, taken out.
    mutating func takeExpired(at now: Timestamp) -> Orphan? {
        guard let o = items.first, now.nanoseconds - o.at.nanoseconds > Self.lifetime else { return nil }
        return takeFirst()
    }

    /// The oldest orphan while another of `count` bytes would pass a cap, taken out.
    mutating func takeOldest(toFit count: Int) -> Orphan? {
        guard !items.isEmpty, items.count >= Self.maxCount || bytes + count > Self.maxBytes else { return nil }
        return takeFirst()
    }

    /// Keeps a copy of `d` (room made first: `takeExpired`, `takeOldest`).
    mutating func keep(_ d: UDPDatagram, kind: Kind) {
        if kind != .shortHeader {
            if unreadablePairs.count >= Self.maxCount * 16 { unreadablePairs = [] }
            unreadablePairs.insert(QUICRoutes.AddressPair(d.source, d.destination))
        }
        items.append((Array(d.payload), d.source, d.destination, d.timestamp, kind))
        bytes += d.payload.count
    }

    /// A connection began between `x` and `y` at `now`: the orphans of its address pair, in order,
    /// and those past their lifetime, both taken out.
    mutating func take(between x: Endpoint, _ y: Endpoint, at now: Timestamp) -> (mine: [Orphan], expired: [Orphan]) {
        guard !items.isEmpty else { return ([], []) }
        let pair = QUICRoutes.AddressPair(x, y)
        var kept: [Orphan] = [], mine: [Orphan] = [], expired: [Orphan] = []
        for o in items {
            if now.nanoseconds - o.at.nanoseconds > Self.lifetime { expired.append(o) }
            else if QUICRoutes.AddressPair(o.source, o.destination) == pair { mine.append(o) } else { kept.append(o) }
        }
        items = kept
        bytes = kept.reduce(0) { $0 + $1.bytes.count }
        return (mine, expired)
    }
}
