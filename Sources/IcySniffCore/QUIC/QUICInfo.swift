/// What one QUIC connection showed: the `quic` object of HAR `log._connections` and of
/// `--connections` (contract: ../shared/corpus/quic/README.md). The TLS handshake facts (SNI,
/// ALPN, cipher, resumption, 0-RTT) are in the connection's `TLSInfo`, as for TLS over TCP.
public struct QUICInfo: Sendable, Equatable {
    /// The version the connection ended on, and the one of the client's first Initial.
    public var version: UInt32 = 0
    public var initialVersion: UInt32 = 0
    /// The server answered with Version Negotiation, offering these.
    public var versionNegotiation = false
    public var offeredVersions: [UInt32] = []
    /// The server sent a Retry.
    public var retry = false
    /// DCID and SCID of the client's first Initial; SCID of the server's first Initial (hex in the
    /// outputs).
    public struct ConnectionIDs: Sendable, Equatable {
        public var originalDCID: [UInt8] = []
        public var clientCID: [UInt8] = []
        public var serverCID: [UInt8]? = nil
    }
    public var cids = ConnectionIDs()
    /// 1-RTT key updates (key phase changes; needs keys).
    public var keyUpdates = 0
    /// The client's address or port changed during the connection (NAT rebinding, migration).
    public var migrated = false
    public var clientPorts: [UInt16] = []
    /// Datagram of the client's first Initial; datagram of its first Handshake packet (which
    /// carries its Finished).
    public var handshakeStart: Timestamp? = nil
    public var handshakeEnd: Timestamp? = nil
    /// 0-RTT packets the client sent.
    public var zeroRTTPackets = 0
    /// UDP payload bytes and datagrams each way.
    public struct Traffic: Sendable, Equatable {
        public var bytesFromClient: UInt64 = 0
        public var bytesFromServer: UInt64 = 0
        public var datagramsFromClient: UInt64 = 0
        public var datagramsFromServer: UInt64 = 0
    }
    public var traffic = Traffic()
    /// Packets decrypted with a key log, and packets that did not authenticate.
    public var packetsDecrypted: UInt64 = 0
    public var packetsUndecryptable: UInt64 = 0
    /// How it ended: "connection_close", "application_close", "stateless_reset", "idle", or nil
    /// (open at the end of the capture).
    public var end: String? = nil
    /// HTTP/3 request streams and pushes seen (keyed).
    public var requests = 0
    public var pushes = 0
    /// The connection was decrypted with secrets from a key log.
    public var decrypted = false

    public init() {}

    public var handshakeMilliseconds: Double? {
        guard let start = handshakeStart, let end = handshakeEnd else { return nil }
        return end.milliseconds(since: start)
    }

    public var versionName: String { QUICVersion.name(version) }

    static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out = [UInt8]()
        out.reserveCapacity(bytes.count * 2)
        for b in bytes { out.append(digits[Int(b >> 4)]); out.append(digits[Int(b & 15)]) }
        return String(decoding: out, as: UTF8.self)
    }
}
