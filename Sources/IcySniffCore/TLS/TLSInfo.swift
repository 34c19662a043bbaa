/// What the cleartext part of a TLS handshake shows about one connection (no keys needed):
/// the `tls` object of HAR `log._connections` (contract: ../shared/corpus/tls/README.md).
public struct TLSInfo: Sendable, Equatable {
    /// The ClientHello's server_name; nil: none.
    public var sni: String? = nil
    /// The ClientHello's ALPN list; nil: no ALPN extension.
    public var alpnOffered: [String]? = nil
    /// The negotiated protocol: in the ServerHello for TLS 1.2; encrypted in TLS 1.3 (nil then).
    public var alpn: String? = nil
    /// 0x0303 for TLS 1.2, 0x0304 for TLS 1.3 (supported_versions), 0 until the ServerHello.
    public var version: UInt16 = 0
    public var cipherSuite: UInt16? = nil
    /// Key-exchange group (TLS 1.3 key_share; TLS 1.2 ServerKeyExchange named curve).
    public var group: UInt16? = nil
    /// Abbreviated handshake: TLS 1.2 session ID or ticket, TLS 1.3 PSK.
    public var resumed = false
    /// "session-id", "ticket" (TLS 1.2), "psk" (TLS 1.3); nil: a full handshake.
    public var resumption: String? = nil
    /// The ClientHello offered 0-RTT early data.
    public var earlyDataOffered = false
    /// The first ClientHello's JA4 fingerprint (`JA4`).
    public var ja4: String? = nil
    /// The ClientHello carried an encrypted_client_hello extension (0xfe0d): ECH offered, or
    /// GREASE ECH, which cannot be told apart; with real ECH the SNI is the provider's public name.
    public var echOffered = false
    /// 0-RTT data accepted: false for TLS 1.2; unknown (nil) for TLS 1.3 without keys.
    public var earlyDataAccepted: Bool? = nil
    /// The server sent a HelloRetryRequest.
    public var helloRetry = false
    /// The packet carrying the first byte of the (first) ClientHello.
    public var handshakeStart: Timestamp? = nil
    /// The packet carrying the last byte of the client's Finished (TLS 1.2: the client's first
    /// record after its ChangeCipherSpec; TLS 1.3: its first encrypted record after the
    /// ServerHello, found by position).
    public var handshakeEnd: Timestamp? = nil
    /// Application-data record bytes (headers included) each way.
    public var applicationBytesFromClient: UInt64 = 0
    public var applicationBytesFromServer: UInt64 = 0
    /// The handshake could not be read to its end (a gap, a record that is not TLS).
    public var incomplete = false
    /// The connection's records were decrypted with secrets from a key log.
    public var decrypted = false
    /// Without keys: what its records' sizes and times say (`RecordPattern`); nil when decrypted.
    public var inferred: InferredTraffic? = nil

    public init() {}

    public var handshakeMilliseconds: Double? {
        guard let start = handshakeStart, let end = handshakeEnd else { return nil }
        return end.milliseconds(since: start)
    }

    /// "TLS 1.2", "TLS 1.3", … as HAR `_connections[].tls.version` writes it.
    public var versionName: String? { Self.versionName(version) }

    public static func versionName(_ v: UInt16) -> String? {
        switch v {
        case 0x0304: return "TLS 1.3"
        case 0x0303: return "TLS 1.2"
        case 0x0302: return "TLS 1.1"
        case 0x0301: return "TLS 1.0"
        case 0x0300: return "SSL 3.0"
        default: return nil
        }
    }

    /// The IANA name of the negotiated cipher suite ("0x….": one the table does not know).
    public var cipherName: String? { cipherSuite.map(Self.cipherName) }

    public static func cipherName(_ id: UInt16) -> String {
        if let name = cipherNames[id] { return name }
        let hex = String(id, radix: 16)
        return "0x" + String(repeating: "0", count: 4 - hex.count) + hex
    }

    /// The IANA name of the key-exchange group.
    public var groupName: String? { group.map { Self.groupNames[$0] ?? "0x" + String($0, radix: 16) } }

    /// The suites browsers, curl, OpenSSL and mobile stacks negotiate (IANA TLS Cipher Suites).
    static let cipherNames: [UInt16: String] = [
        0x1301: "TLS_AES_128_GCM_SHA256", 0x1302: "TLS_AES_256_GCM_SHA384", 0x1303: "TLS_CHACHA20_POLY1305_SHA256",
        0x1304: "TLS_AES_128_CCM_SHA256", 0x1305: "TLS_AES_128_CCM_8_SHA256",
        0xC02B: "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256", 0xC02C: "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
        0xC02F: "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", 0xC030: "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
        0xCCA8: "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256", 0xCCA9: "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256",
        0xCCAA: "TLS_DHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
        0x009C: "TLS_RSA_WITH_AES_128_GCM_SHA256", 0x009D: "TLS_RSA_WITH_AES_256_GCM_SHA384",
        0x009E: "TLS_DHE_RSA_WITH_AES_128_GCM_SHA256", 0x009F: "TLS_DHE_RSA_WITH_AES_256_GCM_SHA384",
        0xC009: "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA", 0xC00A: "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA",
        0xC013: "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA", 0xC014: "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA",
        0xC023: "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256", 0xC024: "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA384",
        0xC027: "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256", 0xC028: "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA384",
        0x002F: "TLS_RSA_WITH_AES_128_CBC_SHA", 0x0035: "TLS_RSA_WITH_AES_256_CBC_SHA",
        0x003C: "TLS_RSA_WITH_AES_128_CBC_SHA256", 0x003D: "TLS_RSA_WITH_AES_256_CBC_SHA256",
        0x000A: "TLS_RSA_WITH_3DES_EDE_CBC_SHA", 0x0004: "TLS_RSA_WITH_RC4_128_MD5", 0x0005: "TLS_RSA_WITH_RC4_128_SHA",
        0x0016: "TLS_DHE_RSA_WITH_3DES_EDE_CBC_SHA", 0x0033: "TLS_DHE_RSA_WITH_AES_128_CBC_SHA",
        0x0039: "TLS_DHE_RSA_WITH_AES_256_CBC_SHA", 0x0067: "TLS_DHE_RSA_WITH_AES_128_CBC_SHA256",
        0x006B: "TLS_DHE_RSA_WITH_AES_256_CBC_SHA256",
    ]

    /// IANA TLS Supported Groups.
    static let groupNames: [UInt16: String] = [
        0x0017: "secp256r1", 0x0018: "secp384r1", 0x0019: "secp521r1", 0x001D: "x25519", 0x001E: "x448",
        0x0100: "ffdhe2048", 0x0101: "ffdhe3072", 0x0102: "ffdhe4096",
        0x11EC: "X25519MLKEM768", 0x6399: "X25519Kyber768Draft00",
    ]
}
