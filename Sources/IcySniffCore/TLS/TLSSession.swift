/// The session of a connection that carries TLS (recognised by content, on any port).
///
/// Without keys it reads what the handshake shows in clear (`TLSInfo`: SNI, ALPN offered,
/// version, cipher suite, group, resumption, HelloRetryRequest, handshake start and end) and
/// counts the application-data records each way; the connection is listed in HAR
/// `log._connections` with its `tls` object and gives no transactions (the HTTP inside is
/// encrypted). Decryption from a key log plugs in here: the plaintext goes to an inner HTTP
/// session with the timestamps of the segments that carried each record.
final class TLSSession: ConnectionSession {
    let scheme = "https"
    private unowned let connection: Connection
    private(set) var info = TLSInfo()
    private let clientRecords = TLSRecordReader()
    private let serverRecords = TLSRecordReader()
    private var clientHandshake = TLSHandshakeBuffer()
    private var serverHandshake = TLSHandshakeBuffer()
    private var clientHellos = 0
    private var ticketOffered = false
    /// The ServerHello (not a HelloRetryRequest) has been read.
    private var sawServerHello = false
    /// TLS 1.2: the server's Certificate came (a full handshake).
    private var sawCertificate = false
    /// From here on the direction's handshake records are encrypted (TLS 1.2: after its
    /// ChangeCipherSpec; TLS 1.3: the server's after its ServerHello).
    private var clientEncrypted = false
    private var serverEncrypted = false

    init(connection: Connection) {
        self.connection = connection
    }

    private var isTLS13: Bool { info.version == 0x0304 }

    // MARK: StreamHandler

    func received(_ chunk: StreamChunk, from direction: Direction, on connection: Connection) {
        // Whether a record's body is kept is decided when its header arrives, by the state the
        // records before it (in the same chunk too) left.
        if direction == .fromClient {
            clientRecords.feed(chunk.bytes, at: chunk.timestamp, keep: { $0 == 22 && !self.clientEncrypted }) { clientRecord($0) }
        } else {
            serverRecords.feed(chunk.bytes, at: chunk.timestamp, keep: { $0 == 22 && !self.serverEncrypted }) { serverRecord($0) }
        }
        if clientRecords.broken || serverRecords.broken { noteBroken() }
    }

    func missed(_ gap: StreamGap, from direction: Direction, on connection: Connection) {
        let reader = direction == .fromClient ? clientRecords : serverRecords
        reader.gap(gap.length, at: gap.timestamp) { direction == .fromClient ? clientRecord($0) : serverRecord($0) }
        if reader.broken { noteBroken() }
    }

    func ended(_ direction: Direction, reason: CloseReason, at timestamp: Timestamp, on connection: Connection) {}

    func finished(_ connection: Connection, at timestamp: Timestamp) {
        if info.handshakeEnd == nil || clientHandshake.overflowed || serverHandshake.overflowed { info.incomplete = true }
        if info.version != 0 && !isTLS13 { info.earlyDataAccepted = false }
        connection.tls = info
    }

    private func noteBroken() {
        if info.handshakeEnd == nil { info.incomplete = true }
    }

    // MARK: Records

    private func clientRecord(_ r: TLSRecordReader.Record) {
        switch r.type {
        case 22:
            if let body = r.body {
                if info.handshakeStart == nil { info.handshakeStart = r.firstByte }
                clientHandshake.append(body) { type, message in
                    if type == 1 { clientHello(message) }
                }
            } else if clientEncrypted, info.handshakeEnd == nil {
                // TLS 1.2: the client's first record after its ChangeCipherSpec is its Finished.
                info.handshakeEnd = r.lastByte
            }
        case 20:
            // TLS 1.3 sends a ChangeCipherSpec only for middlebox compatibility: it changes nothing.
            if sawServerHello && !isTLS13 { clientEncrypted = true }
        case 23:
            info.applicationBytesFromClient &+= UInt64(r.length + 5)
            // TLS 1.3: the client's first encrypted record after the ServerHello ends its flight
            // (0-RTT records come before the ServerHello and do not count).
            if isTLS13, sawServerHello, info.handshakeEnd == nil { info.handshakeEnd = r.lastByte }
        default:
            break
        }
    }

    private func serverRecord(_ r: TLSRecordReader.Record) {
        switch r.type {
        case 22:
            guard let body = r.body else { return }
            serverHandshake.append(body) { type, message in
                switch type {
                case 2: serverHello(message)
                case 11: sawCertificate = true
                case 12: serverKeyExchange(message)
                default: break
                }
            }
        case 20:
            if sawServerHello && !isTLS13 {
                serverEncrypted = true
                // An abbreviated handshake: ChangeCipherSpec right after the ServerHello.
                if !sawCertificate {
                    info.resumed = true
                    info.resumption = ticketOffered ? "ticket" : "session-id"
                }
            }
        case 23:
            info.applicationBytesFromServer &+= UInt64(r.length + 5)
        default:
            break
        }
    }

    // MARK: Handshake messages

    /// RFC 8446 §4.1.2 (and RFC 5246 §7.4.1.2): the client's offer.
    private func clientHello(_ message: ArraySlice<UInt8>) {
        var r = TLSReader(message)
        guard r.u16() != nil, r.take(32) != nil, let sessionID = r.vector(1), r.vector(2) != nil, r.vector(1) != nil else {
            info.incomplete = true
            return
        }
        // After a HelloRetryRequest the second ClientHello repeats the offer: the first one counts.
        clientHellos += 1
        guard clientHellos == 1 else { return }
        _ = sessionID
        guard let block = r.vector(2) else { return }
        for (type, data) in TLSReader.extensions(block) {
            var e = TLSReader(data)
            switch type {
            case 0:   // server_name
                guard info.sni == nil, let list = e.vector(2) else { continue }
                var names = TLSReader(list)
                while let kind = names.u8(), let name = names.vector(2) {
                    if kind == 0 { info.sni = String(decoding: name, as: UTF8.self); break }
                }
            case 16:  // application_layer_protocol_negotiation
                guard info.alpnOffered == nil, let list = e.vector(2) else { continue }
                var protocols = TLSReader(list)
                var offered: [String] = []
                while let p = protocols.vector(1) { offered.append(String(decoding: p, as: UTF8.self)) }
                info.alpnOffered = offered
            case 35:  // session_ticket
                if !data.isEmpty { ticketOffered = true }
            case 42:  // early_data
                info.earlyDataOffered = true
            default:
                break
            }
        }
    }

    /// HelloRetryRequest's fixed random (RFC 8446 §4.1.3).
    private static let helloRetryRandom: [UInt8] = [
        0xCF, 0x21, 0xAD, 0x74, 0xE5, 0x9A, 0x61, 0x11, 0xBE, 0x1D, 0x8C, 0x02, 0x1E, 0x65, 0xB8, 0x91,
        0xC2, 0xA2, 0x11, 0x16, 0x7A, 0xBB, 0x8C, 0x5E, 0x07, 0x9E, 0x09, 0xE2, 0xC8, 0xA8, 0x33, 0x9C,
    ]

    private func serverHello(_ message: ArraySlice<UInt8>) {
        var r = TLSReader(message)
        guard let legacyVersion = r.u16(), let random = r.take(32), let sessionID = r.vector(1),
              let cipher = r.u16(), r.u8() != nil else {
            info.incomplete = true
            return
        }
        let retry = random.elementsEqual(Self.helloRetryRandom)
        var version = legacyVersion
        var group: UInt16? = nil
        var psk = false
        var alpn: String? = nil
        if let block = r.vector(2) {
            for (type, data) in TLSReader.extensions(block) {
                var e = TLSReader(data)
                switch type {
                case 43: if let v = e.u16() { version = v }            // supported_versions
                case 51: group = e.u16()                               // key_share (HRR: the group asked for)
                case 41: psk = true                                    // pre_shared_key
                case 16:                                                // ALPN (TLS 1.2 only in clear)
                    if let list = e.vector(2) {
                        var protocols = TLSReader(list)
                        if let p = protocols.vector(1) { alpn = String(decoding: p, as: UTF8.self) }
                    }
                default: break
                }
            }
        }
        if retry {
            info.helloRetry = true
            return
        }
        sawServerHello = true
        info.version = version
        info.cipherSuite = cipher
        if let group { info.group = group }
        if version == 0x0304 {
            serverEncrypted = true
            if psk { info.resumed = true; info.resumption = "psk" }
        } else {
            info.alpn = alpn
        }
        _ = sessionID
    }

    /// TLS 1.2 ECDHE: ServerKeyExchange names the curve (RFC 8422 §5.4).
    private func serverKeyExchange(_ message: ArraySlice<UInt8>) {
        var r = TLSReader(message)
        if r.u8() == 3, let curve = r.u16() { info.group = curve }
    }
}
