/// A connection ID (at most 20 bytes) as a fixed-size key: hashing three words is cheaper
/// than hashing an array byte by byte, and making one allocates nothing.
struct CIDKey: Hashable {
    var length: Int
    var w0: UInt64 = 0, w1: UInt64 = 0, w2: UInt64 = 0

    @inline(__always)
    init(_ bytes: UnsafeRawBufferPointer) {
        length = bytes.count
        var words: (UInt64, UInt64, UInt64) = (0, 0, 0)
        // One copy of at most 24 bytes (a CID has at most 20): `bytes.prefix(24)` went through
        // Slice's generic `prefix`, about 50 instructions a key.
        if let base = bytes.baseAddress {
            withUnsafeMutableBytes(of: &words) { $0.baseAddress!.copyMemory(from: base, byteCount: min(bytes.count, 24)) }
        }
        (w0, w1, w2) = words
    }

    /// The key of the `length` bytes at `offset` in `buffer` (a short header's DCID in its
    /// datagram). Where the buffer holds 24 bytes from there (most packets) the words are loaded
    /// from it, the bytes past `length` masked off: the same key as the copy makes. The copy
    /// (of 8-20 bytes, overlapping moves) into the words that were then compared cost a failed
    /// store-to-load forwarding per packet: 55-75 % of the tracker's own time in `perf`.
    @inline(__always)
    init(_ buffer: UnsafeRawBufferPointer, at offset: Int, length: Int) {
        guard buffer.count - offset >= 24, length <= 24 else {
            self.init(UnsafeRawBufferPointer(rebasing: buffer[offset..<(offset + length)]))
            return
        }
        self.init(length: length, words: (Self.word(0, of: buffer, at: offset, length: length),
                                          Self.word(1, of: buffer, at: offset, length: length),
                                          Self.word(2, of: buffer, at: offset, length: length)))
    }

    @inline(__always)
    private init(length: Int, words: (UInt64, UInt64, UInt64)) {
        self.length = length
        (w0, w1, w2) = words
    }

    /// Word `k` of the key: the CID's bytes `8k..<8k+8` as they lie in memory, those past its
    /// `length` zero. `buffer` holds 24 bytes from `offset`.
    @inline(__always)
    private static func word(_ k: Int, of buffer: UnsafeRawBufferPointer, at offset: Int, length: Int) -> UInt64 {
        let have = length - 8 * k
        guard have > 0 else { return 0 }
        let w = buffer.loadUnaligned(fromByteOffset: offset + 8 * k, as: UInt64.self)
        guard have < 8 else { return w }
        // The first `have` bytes in memory: the low ones of the little-endian value.
        return (UInt64(littleEndian: w) & ((1 << (UInt64(have) * 8)) - 1)).littleEndian
    }

    init(_ bytes: [UInt8]) {
        self = bytes.withUnsafeBytes { CIDKey($0) }
    }
}

/// Finds the QUIC connections among UDP datagrams, on any port, and hands each datagram to its
/// connection (`QUICConnectionSession`).
///
/// A connection begins with a client's long-header Initial packet of a version icy-sniff reads
/// (or, for Version Negotiation, a datagram of the 1,200 bytes a client Initial is padded to,
/// with a version it does not); it counts as QUIC once a packet of it decrypts or a Version
/// Negotiation answers it, and only then is it reported. Later datagrams are found by their
/// Destination Connection ID: every CID either side announced (the client's and the server's
/// SCIDs, a Retry's, NEW_CONNECTION_ID frames), for short headers by the lengths in use; a
/// zero-length CID (Chromium's client side) by the address pair. A client datagram from a new
/// address with a known DCID is the same connection, migrated.
///
/// Input: `UDPDatagram`s. Output: finished connections (`onFinished`), and their transactions
/// through the emitter. Memory: the open connections, at most `maxConnections`.
final class QUICTracker {
    /// Which open connection a datagram is for (`QUICRoutes`).
    private var routes = QUICRoutes()
    private var open: [ObjectIdentifier: QUICConnectionSession] = [:]
    private let keyLog: KeyLog?
    private unowned let emitter: TransactionEmitter
    private let options: HTTPParserOptions
    private let nextID: () -> UInt64
    /// Gives back an id `nextID` answered, when its connection was discarded at once.
    var giveBackID: (UInt64) -> Void = { _ in }
    var onFinished: (Connection) -> Void = { _ in }
    /// Connections reported so far (confirmed QUIC).
    private(set) var connectionsSeen: UInt64 = 0
    /// Connections followed at once (half of `--max-connections`, set by the pipeline): past it,
    /// the longest idle quarter is ended, flagged `connection_evicted`, as TCP's table does.
    /// Before, the 65,537th connection and all after it were neither followed nor named, and
    /// 100,000 of them took 858 MiB.
    var maxConnections = ReassemblyLimits().maxConnections / 2

    /// Where every connection's packets are unprotected and opened, in turn.
    private let workspace = QUICConnectionSession.PacketWorkspace()

    /// Where the connections' 1-RTT packets are opened (reading a file: the second core).
    private let decryption: DecryptionQueue?

    init(keyLog: KeyLog?, emitter: TransactionEmitter, options: HTTPParserOptions, decryption: DecryptionQueue? = nil,
         nextID: @escaping () -> UInt64) {
        self.decryption = decryption
        self.keyLog = keyLog
        self.emitter = emitter
        self.options = options
        self.nextID = nextID
    }

    var openConnections: Int { open.count }

    /// Every open connection confirmed as QUIC.
    func forEachOpen(_ body: (Connection) -> Void) {
        for session in open.values where session.confirmed { body(session.connection) }
    }

    /// One UDP datagram: answers whether it belongs to a QUIC connection.
    @discardableResult
    func observe(_ d: UDPDatagram) -> Bool {
        let p = d.payload
        guard p.count >= 1 + 4 + 16 else { return false }
        let first = p[0]
        if first & 0x80 != 0 {
            return longHeader(d)
        }
        // A short header: the DCID of each length in use, else the address pair. Its fixed bit
        // may be 0 (peers that agreed to grease it, RFC 9287): only a datagram matching nothing
        // is judged by it.
        guard let session = routes.session(shortHeader: p) ?? routes.session(between: d.source, d.destination) else {
            // Perhaps a packet that overtook its connection's first Initial, or of a connection
            // whose first Initial was lost (found when its orphaned Handshake packet is dropped):
            // kept a moment (`QUICOrphans.keepsShortHeader`).
            if orphans.keepsShortHeader(first, between: d.source, d.destination) {
                keepOrphan(d, kind: .shortHeader)
            }
            return false
        }
        deliver(d, to: session)
        return true
    }

    private func longHeader(_ d: UDPDatagram) -> Bool {
        let p = d.payload
        guard let header = QUICLongHeader(p) else { return false }
        let version = header.versionNumber
        let dcid = Array(header.dcid), scid = Array(header.scid)
        let dcidKey = CIDKey(header.dcid)
        if version == 0 {
            // Version Negotiation (RFC 9000 §17.2.1): the server echoes the client's CIDs swapped.
            guard let s = routes.session(cid: CIDKey(scid)) ?? routes.session(cid: dcidKey) ?? routes.session(between: d.source, d.destination) else {
                return false
            }
            var versions: [UInt32] = []
            var r = QUICReader(p, at: header.afterCIDs)
            while let v = r.u32() { versions.append(v) }
            s.versionNegotiation(versions)
            deliver(d, to: s)
            return true
        }
        if let s = routes.session(cid: dcidKey) {
            deliver(d, to: s)
            return true
        }
        let known = header.version
        let isInitial = known.map { header.type($0) == .initial } ?? (p.count >= 1200)
        // The client starting again after Version Negotiation or Retry, perhaps with new CIDs.
        if let s = routes.session(between: d.source, d.destination), s.serverEndpoint == d.destination,
           isInitial, s.restarted || !s.confirmed {
            register(dcid, for: s)
            register(scid, for: s)
            deliver(d, to: s)
            return true
        }
        // A server's long header to a client whose CID is empty: by address.
        if let s = routes.session(between: d.source, d.destination) {
            deliver(d, to: s)
            return true
        }
        guard isInitial, p.count >= 1200 || known != nil, p[0] & 0x40 != 0 || known == nil else {
            if known != nil { keepOrphan(d, kind: .longHeader) }
            return false
        }
        if open.count >= maxConnections { evictIdle(now: d.timestamp, keep: maxConnections * 3 / 4) }
        let s = QUICConnectionSession(id: nextID(), client: d.source, server: d.destination, dcid: dcid, scid: scid, version: version,
                                      at: d.timestamp, keyLog: keyLog, emitter: emitter, options: options, decryption: decryption,
                                      workspace: workspace)
        open[ObjectIdentifier(s)] = s
        register(dcid, for: s)
        register(scid, for: s)
        routes.register(d.source, d.destination, for: s)
        deliver(d, to: s)
        if known != nil && !s.confirmed {
            // Not a client's first Initial (its keys derive from its own DCID): a server's Initial
            // that came before the client's (reordered, or the capture began mid-handshake).
            // Kept a moment, in case the connection it belongs to turns up.
            discard(s)
            giveBackID(s.connection.id)
            keepOrphan(d, kind: .initial)
            return false
        }
        replayOrphans(for: s)
        return true
    }

    /// Datagrams that matched no connection yet (`QUICOrphans`).
    private var orphans = QUICOrphans()

    /// An orphan no connection took is counted when it is dropped (`onUnmatched`): as
    /// `quic_initial_unreadable` (an Initial), else `quic_datagram_unmatched`; a short header
    /// only on an address pair an unmatched long header used, or on port 443, since any UDP
    /// datagram may have its second bit set. Before, a damaged or lost first Initial made its
    /// connection and all its transactions vanish without a word.
    var onUnmatched: (Weird) -> Void = { _ in }
    /// The version of an unreadable client Initial no connection took (`quic_initial_unreadable`).
    var onUnreadableVersion: (UInt32) -> Void = { _ in }

    private func dropped(_ o: QUICOrphans.Orphan) {
        // Its connection never turned up: perhaps its client's first Initial was lost.
        if o.kind != .shortHeader,
           o.bytes.withUnsafeBytes({ recover(UDPDatagram(source: o.source, destination: o.destination, payload: $0, timestamp: o.at)) }) {
            return
        }
        switch o.kind {
        case .initial:
            onUnmatched(.quicInitialUnreadable)
            if let version = o.bytes.withUnsafeBytes({ QUICTracker.longHeaderVersion($0) }) { onUnreadableVersion(version) }
        case .longHeader: onUnmatched(.quicDatagramUnmatched)
        case .shortHeader:
            if let weird = orphans.verdict(shortHeader: o) { onUnmatched(weird) }
        }
    }
    /// The version of a long-header packet (RFC 8999 §5.1: the four bytes after the first; 0 is
    /// Version Negotiation, not a version).
    static func longHeaderVersion(_ bytes: UnsafeRawBufferPointer) -> UInt32? {
        guard bytes.count >= 5, bytes[0] & 0x80 != 0 else { return nil }
        let v = UInt32(bytes[1]) << 24 | UInt32(bytes[2]) << 16 | UInt32(bytes[3]) << 8 | UInt32(bytes[4])
        return v == 0 ? nil : v
    }

    private func keepOrphan(_ d: UDPDatagram, kind: QUICOrphans.Kind) {
        let recoveredBefore = recovered
        defer {
            // Dropping an orphan made a connection of it (`recover`): this datagram may be its.
            if recovered != recoveredBefore { observe(d) }
        }
        // Those past their lifetime first, then the oldest while the caps say so. One at a time:
        // dropping one may make a connection of it, which takes its own from the orphans.
        while let o = orphans.takeExpired(at: d.timestamp) { dropped(o) }
        while let o = orphans.takeOldest(toFit: d.payload.count) { dropped(o) }
        guard recovered == recoveredBefore else { return }
        orphans.keep(d, kind: kind)
    }

    /// Address pairs whose datagrams were searched for in the key log (bounded: started again
    /// when full).
    private var searchedPairs: Set<QUICRoutes.AddressPair> = []
    /// Connections made by `recover` so far.
    private var recovered = 0

    /// An orphan dropped (no connection took it in `orphanLifetime`, or the orphans were full)
    /// that holds a Handshake packet: the connection whose client's first Initial was not
    /// captured, when a key-log search opens it (`QUICKeyTrial`, once per address pair). Then a
    /// connection is made of it, flagged `quic_keys_found_by_search`, and the orphans of its
    /// address pair are handed to it. Not before: a packet that merely overtook the Initial
    /// finds its connection when the Initial comes.
    private func recover(_ d: UDPDatagram) -> Bool {
        guard let keyLog, keyLog.hasSecrets, QUICKeyTrial.handshakePacket(in: d.payload) != nil else { return false }
        let pair = QUICRoutes.AddressPair(d.source, d.destination)
        guard !searchedPairs.contains(pair) else { return false }
        if searchedPairs.count >= QUICOrphans.maxCount * 64 { searchedPairs = [] }
        searchedPairs.insert(pair)
        guard workspace.searches.take() else {
            onUnmatched(.quicKeySearchLimited)
            return false
        }
        guard let found = QUICKeyTrial.search(d.payload, keyLog: keyLog) else { return false }
        let (client, server) = found.fromServer ? (d.destination, d.source) : (d.source, d.destination)
        let (clientCID, serverCID) = found.fromServer ? (found.dcid, found.scid) : (found.scid, found.dcid)
        if open.count >= maxConnections { evictIdle(now: d.timestamp, keep: maxConnections * 3 / 4) }
        let s = QUICConnectionSession(id: nextID(), client: client, server: server, dcid: serverCID, scid: clientCID,
                                      version: found.version.number, at: d.timestamp, keyLog: keyLog, emitter: emitter,
                                      options: options, decryption: decryption, workspace: workspace)
        s.adopt(found, originalDCIDKnown: false)
        recovered += 1
        open[ObjectIdentifier(s)] = s
        register(clientCID, for: s)
        register(serverCID, for: s)
        routes.register(d.source, d.destination, for: s)
        deliver(d, to: s)
        replayOrphans(for: s)
        return true
    }

    /// Orphans of the connection that just began (same address pair), handed to it in order.
    private func replayOrphans(for s: QUICConnectionSession) {
        guard !orphans.isEmpty else { return }
        let (mine, expired) = orphans.take(between: s.clientEndpoint, s.serverEndpoint, at: s.lastSeen)
        for o in mine {
            o.bytes.withUnsafeBytes { deliver(UDPDatagram(source: o.source, destination: o.destination, payload: $0, timestamp: o.at), to: s) }
        }
        // After `orphans` is settled: dropping one may make a connection of it, which takes its own.
        for o in expired { dropped(o) }
    }

    /// A connection that turned out not to be one: forgotten without a word.
    private func discard(_ s: QUICConnectionSession) {
        open[ObjectIdentifier(s)] = nil
        routes.remove(s)
    }

    /// Routes datagrams with this DCID to `s`; past `QUICRoutes.maxCIDsPerConnection` the oldest
    /// is forgotten and the connection says so.
    private func register(_ cid: [UInt8], for s: QUICConnectionSession) {
        if routes.register(cid, for: s), s.connection.weirds[.quicConnectionIDsCapped] == nil { s.connection.note(.quicConnectionIDsCapped) }
    }

    private func deliver(_ d: UDPDatagram, to s: QUICConnectionSession) {
        let oldClient = s.clientEndpoint
        s.datagram(d.payload, from: d.source, to: d.destination, at: d.timestamp)
        if s.clientEndpoint != oldClient { routes.register(s.clientEndpoint, s.serverEndpoint, for: s) }
        if s.hasNewCIDs {
            for cid in s.takeNewCIDs() { register(cid, for: s) }
        }
    }

    /// Ends the longest idle connections, flagged `connection_evicted`, until `keep` are open
    /// (one sort per round: rounds come once every quarter of the cap).
    private func evictIdle(now: Timestamp, keep: Int) {
        let sorted = open.values.sorted { ($0.lastSeen, $0.connection.id) < ($1.lastSeen, $1.connection.id) }
        for s in sorted.prefix(max(0, open.count - keep)) {
            s.connection.note(.connectionEvicted)
            end(s, at: s.lastSeen)
        }
    }

    /// How long a connection may be idle (capture time, nanoseconds) before it ends when no
    /// other limit is given (`Pipeline` sets `--idle-flush`'s).
    var idleTimeout: Int64 = 120_000_000_000

    /// Ends the connections idle for longer than `idle` nanoseconds (nil: `idleTimeout`).
    func expire(now: Timestamp, idleLongerThan idle: Int64?) {
        let idle = idle ?? idleTimeout
        for s in open.values where now.nanoseconds - s.lastSeen.nanoseconds > idle {
            end(s, at: s.lastSeen)
        }
    }

    /// Ends every open connection (the end of the capture, or of a piece of it), each flagged
    /// `weird` when given (a capture set's break), as TCP's table does.
    func flushAll(at ts: Timestamp, marking weird: Weird? = nil) {
        // What no connection took by the end of the capture (or of a piece of it).
        while let o = orphans.takeFirst() { dropped(o) }
        for s in open.values.sorted(by: { $0.connection.id < $1.connection.id }) {
            if let weird, s.confirmed { s.connection.note(weird) }
            // At a break its connections may send on in the next piece; at the end of the capture
            // (or between separate captures) nothing of theirs comes any more.
            end(s, at: ts, remembered: weird != nil)
        }
    }

    /// `remembered`: its short headers to come are counted (`QUICOrphans.connectionEnded`: idle,
    /// evicted, a break).
    private func end(_ s: QUICConnectionSession, at ts: Timestamp, remembered: Bool = true) {
        discard(s)
        guard s.confirmed else { return }
        connectionsSeen += 1
        if remembered { orphans.connectionEnded(between: s.clientEndpoint, s.serverEndpoint) }
        // After its packets still on the decryption thread.
        let report = { [onFinished] in
            s.finish(at: ts)
            onFinished(s.connection)
        }
        if let decryption { decryption.later(report) } else { report() }
    }
}
