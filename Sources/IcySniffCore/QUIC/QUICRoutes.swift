/// Which open QUIC connection a datagram belongs to: by the Destination Connection ID of its first
/// packet (every CID either side announced; for a short header, which does not say its DCID's
/// length, by each length in use), else by its address pair (a zero-length CID: Chromium's client
/// side). quic-go's packet handler map, for a reader that follows many connections at once.
///
/// Memory: per connection at most `maxCIDsPerConnection` CIDs (the oldest forgotten past it) and
/// the address pairs it used.
struct QUICRoutes {
    typealias Session = QUICConnectionSession

    /// Connection IDs followed per connection: a peer uses a few at once (its
    /// active_connection_id_limit, RFC 9000 §5.1.1) and retires the rest; past this the oldest
    /// are forgotten, named `quic_connection_ids_capped` (200,000 NEW_CONNECTION_ID frames took
    /// 81 MiB).
    static let maxCIDsPerConnection = 1024

    struct AddressPair: Hashable {
        var a: Endpoint
        var b: Endpoint
        init(_ x: Endpoint, _ y: Endpoint) {
            if x < y { a = x; b = y } else { a = y; b = x }
        }
    }

    private var byCID: [CIDKey: Session] = [:]
    /// The last two DCIDs of short headers that were looked up, and their connections:
    /// consecutive datagrams mostly belong to one connection, and a compare is cheaper than a
    /// look-up. Two, because the two directions of a transfer (data one way, ACKs the other)
    /// alternate and carry different DCIDs. A new one replaces the older (`recentNext`).
    private var recentShort: [(key: CIDKey, session: Session)] = []
    private var recentNext = 0
    private var byAddress: [AddressPair: Session] = [:]
    /// The lengths of the CIDs in `byCID` (a short header does not say its DCID's length).
    private var cidLengths: [Int: Int] = [:]
    /// The CIDs and address pairs registered for each connection (removed with it).
    private var registered: [ObjectIdentifier: (cids: [CIDKey], pairs: [AddressPair])] = [:]

    /// The connection a short-header packet (`p`, the datagram's payload) is for, by its DCID.
    @inline(__always)
    mutating func session(shortHeader p: UnsafeRawBufferPointer) -> Session? {
        for i in recentShort.indices {
            let length = recentShort[i].key.length
            if p.count > 1 + length, CIDKey(p, at: 1, length: length) == recentShort[i].key {
                return recentShort[i].session
            }
        }
        for (length, _) in cidLengths where length > 0 && p.count > 1 + length {
            let key = CIDKey(p, at: 1, length: length)
            if let s = byCID[key] {
                if recentShort.count < 2 { recentShort.append((key, s)) } else { recentShort[recentNext] = (key, s) }
                recentNext = (recentNext + 1) % 2
                return s
            }
        }
        return nil
    }

    func session(cid: CIDKey) -> Session? { byCID[cid] }

    func session(between x: Endpoint, _ y: Endpoint) -> Session? { byAddress[AddressPair(x, y)] }

    /// Routes datagrams with this DCID to `s` (a zero-length CID routes nothing: by address).
    /// Answers true when `s` passed `maxCIDsPerConnection` and its oldest CID was forgotten.
    mutating func register(_ cid: [UInt8], for s: Session) -> Bool {
        let key = CIDKey(cid)
        guard !cid.isEmpty, byCID[key] !== s else { return false }
        if byCID[key] == nil { cidLengths[cid.count, default: 0] += 1 }
        byCID[key] = s
        let id = ObjectIdentifier(s)
        registered[id, default: ([], [])].cids.append(key)
        guard registered[id]!.cids.count > Self.maxCIDsPerConnection else { return false }
        let old = registered[id]!.cids.removeFirst()
        unroute(old, from: s)
        return true
    }

    /// Routes datagrams between the two endpoints to `s`.
    mutating func register(_ x: Endpoint, _ y: Endpoint, for s: Session) {
        let pair = AddressPair(x, y)
        byAddress[pair] = s
        registered[ObjectIdentifier(s), default: ([], [])].pairs.append(pair)
    }

    /// Routes nothing more to `s` (it ended, or was no connection).
    mutating func remove(_ s: Session) {
        let mine = registered.removeValue(forKey: ObjectIdentifier(s)) ?? ([], [])
        for cid in mine.cids { unroute(cid, from: s) }
        if recentShort.contains(where: { $0.session === s }) {
            recentShort.removeAll { $0.session === s }
            recentNext = recentShort.count
        }
        for pair in mine.pairs where byAddress[pair] === s { byAddress[pair] = nil }
    }

    /// Stops routing `cid` to `s` (when it still does).
    private mutating func unroute(_ cid: CIDKey, from s: Session) {
        guard byCID[cid] === s else { return }
        byCID[cid] = nil
        cidLengths[cid.length, default: 1] -= 1
        if cidLengths[cid.length] == 0 { cidLengths[cid.length] = nil }
        if let i = recentShort.firstIndex(where: { $0.key == cid }) {
            recentShort.remove(at: i)
            recentNext = recentShort.count
        }
    }
}
