/// The connection IDs of one QUIC connection: the client's first two (its Initial's DCID and
/// SCID, kept for good) and every one either side announced since (Retry, the server's first
/// packets, NEW_CONNECTION_ID), the newest `QUICRoutes.maxCIDsPerConnection` of them in the
/// order they came (the oldest go past the cap; the tracker forgets them too, and names it).
/// Those announced since the tracker last asked are handed to it to route by.
struct QUICConnectionIDs {
    private var known: Set<CIDKey>
    private var order: [CIDKey] = []
    /// Announced, not yet taken by the tracker.
    private(set) var announced: [[UInt8]] = []

    init(_ dcid: [UInt8], _ scid: [UInt8]) {
        known = [CIDKey(dcid), CIDKey(scid)]
    }

    mutating func announce(_ cid: [UInt8]) {
        announced.append(cid)
        guard known.insert(CIDKey(cid)).inserted else { return }
        order.append(CIDKey(cid))
        if order.count > QUICRoutes.maxCIDsPerConnection { known.remove(order.removeFirst()) }
    }

    func contains(_ cid: CIDKey) -> Bool { known.contains(cid) }

    mutating func takeAnnounced() -> [[UInt8]] {
        defer { announced = [] }
        return announced
    }
}
