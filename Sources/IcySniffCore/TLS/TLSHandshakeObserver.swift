/// Reads the handshake messages whose contents icy-sniff reports, into a `TLSInfo`: the
/// ClientHello, the ServerHello (or HelloRetryRequest) and, decrypted, EncryptedExtensions. One
/// reader for TLS over TCP (`TLSSession`, fed by its record layer) and QUIC (`QUICConnectionSession`,
/// fed by its CRYPTO frames), as rustls feeds one message joiner from both.
///
/// Input: one whole handshake message body (after the 4-byte header, `TLSHandshakeBuffer`).
/// Output: the facts, written into `info`, and what the caller's key schedule needs.
enum TLSHandshakeObserver {
    struct ClientHello {
        var random: [UInt8]
        /// A TLS 1.2 session ticket was offered (resumption by ticket, if the server agrees).
        var ticketOffered: Bool
    }

    /// RFC 8446 §4.1.2 (and RFC 5246 §7.4.1.2): the client's offer. `first`: whether this is the
    /// connection's first ClientHello (after a HelloRetryRequest the second repeats the offer: only
    /// its random is read, the facts stay those of the first). Nil when it is malformed (`info`
    /// is then flagged incomplete).
    static func clientHello(_ message: ArraySlice<UInt8>, into info: inout TLSInfo, first: Bool) -> ClientHello? {
        var r = TLSReader(message)
        guard r.u16() != nil, let random = r.take(32), r.vector(1) != nil, r.vector(2) != nil, r.vector(1) != nil else {
            info.incomplete = true
            return nil
        }
        var hello = ClientHello(random: Array(random), ticketOffered: false)
        guard first, let block = r.vector(2) else { return hello }
        info.ja4 = JA4.fingerprint(message)
        for (type, data) in TLSReader.extensions(block) {
            var e = TLSReader(data)
            switch type {
            case 0xfe0d:   // encrypted_client_hello
                info.echOffered = true
            case 0:   // server_name
                guard info.sni == nil, let list = e.vector(2) else { continue }
                var names = TLSReader(list)
                while let kind = names.u8(), let name = names.vector(2) {
                    if kind == 0 { info.sni = String(decoding: name, as: UTF8.self); break }
                }
            case 16:  // application_layer_protocol_negotiation
                guard info.alpnOffered == nil, let list = e.vector(2) else { continue }
                info.alpnOffered = TLSReader.protocolNames(list)
            case 35:  // session_ticket
                if !data.isEmpty { hello.ticketOffered = true }
            case 42:  // early_data
                info.earlyDataOffered = true
            default:
                break
            }
        }
        return hello
    }

    struct ServerHello {
        var random: [UInt8]
        var cipherSuite: UInt16
        /// supported_versions, else the legacy version.
        var version: UInt16
        /// A HelloRetryRequest (its random is the fixed value of RFC 8446 §4.1.3), not a ServerHello.
        var helloRetry: Bool
        /// The server agreed to encrypt-then-MAC (RFC 7366; TLS 1.2 CBC suites).
        var encryptThenMAC: Bool
    }

    /// HelloRetryRequest's fixed random (RFC 8446 §4.1.3).
    static let helloRetryRandom: [UInt8] = [
        0xCF, 0x21, 0xAD, 0x74, 0xE5, 0x9A, 0x61, 0x11, 0xBE, 0x1D, 0x8C, 0x02, 0x1E, 0x65, 0xB8, 0x91,
        0xC2, 0xA2, 0x11, 0x16, 0x7A, 0xBB, 0x8C, 0x5E, 0x07, 0x9E, 0x09, 0xE2, 0xC8, 0xA8, 0x33, 0x9C,
    ]

    /// The server's choice: version, cipher suite, key-share group, PSK resumption, and (TLS 1.2)
    /// the ALPN protocol, written into `info`; a HelloRetryRequest only sets `helloRetry`.
    static func serverHello(_ message: ArraySlice<UInt8>, into info: inout TLSInfo) -> ServerHello? {
        var r = TLSReader(message)
        guard let legacyVersion = r.u16(), let random = r.take(32), r.vector(1) != nil,
              let cipher = r.u16(), r.u8() != nil else {
            info.incomplete = true
            return nil
        }
        let retry = random.elementsEqual(helloRetryRandom)
        var hello = ServerHello(random: Array(random), cipherSuite: cipher, version: legacyVersion, helloRetry: retry, encryptThenMAC: false)
        var group: UInt16? = nil
        var psk = false
        var alpn: String? = nil
        if let block = r.vector(2) {
            for (type, data) in TLSReader.extensions(block) {
                var e = TLSReader(data)
                switch type {
                case 43: if let v = e.u16() { hello.version = v }      // supported_versions
                case 51: group = e.u16()                               // key_share (HRR: the group asked for)
                case 41: psk = true                                    // pre_shared_key
                case 22: hello.encryptThenMAC = true                   // encrypt_then_mac (RFC 7366)
                case 16:                                                // ALPN (TLS 1.2 only in clear)
                    if let list = e.vector(2) { alpn = TLSReader.protocolNames(list).first }
                default: break
                }
            }
        }
        if retry {
            info.helloRetry = true
            return hello
        }
        info.version = hello.version
        info.cipherSuite = cipher
        if let group { info.group = group }
        if hello.version == 0x0304 {
            if psk { info.resumed = true; info.resumption = "psk" }
        } else {
            info.alpn = alpn
        }
        return hello
    }

    /// TLS 1.3 EncryptedExtensions (decrypted): the negotiated ALPN, and whether 0-RTT was
    /// accepted (the early_data extension), written into `info`. Answers the latter.
    @discardableResult
    static func encryptedExtensions(_ message: ArraySlice<UInt8>, into info: inout TLSInfo,
                                    quicTransportParameters: (ArraySlice<UInt8>) -> Void = { _ in }) -> Bool {
        var r = TLSReader(message)
        var accepted = false
        if let block = r.vector(2) {
            for (t, data) in TLSReader.extensions(block) {
                var e = TLSReader(data)
                if t == 16, let list = e.vector(2), let chosen = TLSReader.protocolNames(list).first { info.alpn = chosen }
                if t == 42 { accepted = true }
                // QUIC's transport parameters (RFC 9001 §8.2; 0xffa5 before RFC 9000): QUIC reads them.
                if t == 0x39 || t == 0xffa5 { quicTransportParameters(data) }
            }
        }
        info.earlyDataAccepted = accepted
        return accepted
    }

    /// TLS 1.2 ECDHE ServerKeyExchange: the named curve (RFC 8422 §5.4), into `info.group`.
    static func serverKeyExchange(_ message: ArraySlice<UInt8>, into info: inout TLSInfo) {
        var r = TLSReader(message)
        if r.u8() == 3, let curve = r.u16() { info.group = curve }
    }
}
