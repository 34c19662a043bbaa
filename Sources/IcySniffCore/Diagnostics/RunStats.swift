/// Counters of one run (one or more captures), printed at the end and in reports.
public struct RunStats: Sendable {
    public var packets: UInt64 = 0
    public var bytes: UInt64 = 0
    public var tcpSegments: UInt64 = 0
    public var udpDatagrams: UInt64 = 0
    public var skippedPackets: UInt64 = 0
    public var malformedPackets: UInt64 = 0
    public var connections: UInt64 = 0
    public var transactions: UInt64 = 0
    /// Connections that carried TLS (their metadata is in `log._connections` / `--connections`).
    public var tlsConnections: UInt64 = 0
    /// Of those, the ones decrypted with a key log.
    public var tlsDecrypted: UInt64 = 0
    /// QUIC connections (HTTP/3 and other QUIC), and those decrypted with a key log.
    public var quicConnections: UInt64 = 0
    public var quicDecrypted: UInt64 = 0
    /// Exchanges estimated from encrypted connections' records and packets (`RecordPattern`,
    /// `QUICPacketPattern`).
    public var inferredExchanges: UInt64 = 0
    public var weirds: [Weird: UInt64] = [:]
    /// The versions in the cleartext header of QUIC Initials whose connection could not be read
    /// (`quic_initial_unreadable`, and datagrams that lost a fragment): what tshark shows of such a
    /// packet, said in the summary. At most `maxVersionsNamed` versions, the rest under 0.
    public var unreadableQUICVersions: [UInt32: UInt64] = [:]
    static let maxVersionsNamed = 16
    public var firstPacket: Timestamp? = nil
    public var lastPacket: Timestamp? = nil

    public init() {}

    mutating func count(_ weird: Weird, by n: UInt64 = 1) { weirds[weird, default: 0] += n }

    /// `unreadableQUICVersions` by name ("QUIC v1", "draft-29", "0x…"), most first.
    public var unreadableQUICVersionNames: [(name: String, count: UInt64)] {
        unreadableQUICVersions.sorted { ($1.value, $0.key) < ($0.value, $1.key) }
            .map { ($0.key == 0 ? "other versions" : QUICVersion.name($0.key), $0.value) }
    }

    mutating func countUnreadable(quicVersion version: UInt32, by n: UInt64 = 1) {
        let key = unreadableQUICVersions[version] != nil || unreadableQUICVersions.count < Self.maxVersionsNamed ? version : 0
        unreadableQUICVersions[key, default: 0] += n
    }

    public mutating func merge(_ other: RunStats) {
        packets += other.packets
        bytes += other.bytes
        tcpSegments += other.tcpSegments
        udpDatagrams += other.udpDatagrams
        skippedPackets += other.skippedPackets
        malformedPackets += other.malformedPackets
        connections += other.connections
        transactions += other.transactions
        tlsConnections += other.tlsConnections
        tlsDecrypted += other.tlsDecrypted
        quicConnections += other.quicConnections
        quicDecrypted += other.quicDecrypted
        inferredExchanges += other.inferredExchanges
        for (k, v) in other.weirds { weirds[k, default: 0] += v }
        for (k, v) in other.unreadableQUICVersions { countUnreadable(quicVersion: k, by: v) }
        if let f = other.firstPacket { firstPacket = min(firstPacket ?? f, f) }
        if let l = other.lastPacket { lastPacket = max(lastPacket ?? l, l) }
    }
}

extension RunStats {
    /// One connection in the TLS and QUIC counts: a QUIC connection as QUIC (its handshake is
    /// TLS 1.3 too), a TCP one with a TLS handshake as TLS; each decrypted or not. A ClientHello
    /// the server answered in plain HTTP carried nothing encrypted: not counted.
    /// An open QUIC connection (`--stats`) has no `quic` facts yet: it is QUIC by its transport,
    /// decrypted by its TLS facts, which its session keeps current.
    mutating func countEncryption(of connection: Connection) {
        inferredExchanges += UInt64(connection.tls?.inferred?.exchanges.count ?? 0)
        if connection.transport == .quic {
            quicConnections += 1
            if connection.quic?.decrypted ?? connection.tls?.decrypted ?? false { quicDecrypted += 1 }
        } else if let tls = connection.tls, connection.weirds[.tlsAnsweredInPlainHTTP] == nil {
            tlsConnections += 1
            if tls.decrypted { tlsDecrypted += 1 }
        }
    }
}
