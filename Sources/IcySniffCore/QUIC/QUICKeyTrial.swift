/// Finds the key-log secrets of a QUIC connection whose client's first Initial was not captured
/// (lost, or damaged): the ClientHello random, by which the key log names a connection's
/// secrets, is then unknown, and before this the whole connection and its transactions vanished.
/// A Handshake packet of it is tried with the key log's newest handshake secrets of each side,
/// with each cipher suite the secret's hash allows; the secret that opens it names the
/// connection (its client random), the packet's sender and the suite. AEAD authentication makes
/// a wrong secret fail, never match.
///
/// Bounded: at most `maxCandidates` secrets per side, found among the newest `maxExamined` key-log
/// lines, and `maxSearches` searches per run (the `Budget` a tracker and its connections share);
/// a search that could not be made is named (`quic_key_search_limited`).
struct QUICKeyTrial {
    static let maxCandidates = 1024
    static let maxExamined = 8192
    static let maxSearches = 64

    /// What a search found.
    struct Found {
        var clientRandom: [UInt8]
        var cipher: TLSCipherParameters
        var suite: UInt16
        /// The packet that opened came from the server.
        var fromServer: Bool
        /// The packet's connection IDs: its destination's and its source's.
        var dcid: [UInt8]
        var scid: [UInt8]
        var version: QUICVersion
    }

    /// Searches left in the run.
    final class Budget {
        private(set) var left = QUICKeyTrial.maxSearches
        /// One search, if any is left.
        func take() -> Bool {
            guard left > 0 else { return false }
            left -= 1
            return true
        }
    }

    /// The first Handshake packet among the coalesced long-header packets of `datagram`.
    static func handshakePacket(in datagram: UnsafeRawBufferPointer)
        -> (packet: UnsafeRawBufferPointer, pnOffset: Int, dcid: [UInt8], scid: [UInt8], version: QUICVersion)? {
        var at = 0
        while at < datagram.count, datagram[at] & 0x80 != 0 {
            let bytes = UnsafeRawBufferPointer(rebasing: datagram[at...])
            guard let header = QUICLongHeader(bytes), let version = header.version else { return nil }
            let type = header.type(version)
            guard let (pnOffset, end) = header.extent(of: type, in: bytes) else { return nil }
            if type == .handshake {
                return (UnsafeRawBufferPointer(rebasing: bytes[0..<end]), pnOffset, Array(header.dcid), Array(header.scid), version)
            }
            at += end
        }
        return nil
    }

    /// The secrets of the key log that open `datagram`'s first Handshake packet, if any does.
    /// `suite`: the connection's, when its ServerHello was read.
    static func search(_ datagram: UnsafeRawBufferPointer, keyLog: KeyLog, suite known: UInt16? = nil) -> Found? {
        guard let (packet, pnOffset, dcid, scid, version) = handshakePacket(in: datagram) else { return nil }
        // SERVER_HANDSHAKE_TRAFFIC_SECRET (code 2), then the client's (1).
        for (code, fromServer) in [(2, true), (1, false)] {
            for (random, secret) in keyLog.newestSecrets(labelled: code, limit: maxCandidates, examined: maxExamined) {
                let suites: [UInt16] = known.map { [$0] } ?? (secret.count == 48 ? [0x1302] : [0x1301, 0x1303])
                for suite in suites {
                    guard let cipher = TLSCipherParameters(suite: suite), cipher.hashLength == secret.count,
                          let keys = QUICPacketKeys(secret: secret, cipher: cipher, version: version),
                          opens(packet, pnOffset: pnOffset, with: keys) else { continue }
                    return Found(clientRandom: random, cipher: cipher, suite: suite, fromServer: fromServer,
                                 dcid: dcid, scid: scid, version: version)
                }
            }
        }
        return nil
    }

    /// Whether `keys` remove the header protection of a long-header packet and authenticate it
    /// (its packet number decoded as the first of its space: RFC 9000 §A.3 with none before).
    static func opens(_ packet: UnsafeRawBufferPointer, pnOffset: Int, with keys: QUICPacketKeys) -> Bool {
        guard packet.count >= pnOffset + 4 + 16 else { return false }
        guard let mask = keys.mask(UnsafeRawBufferPointer(rebasing: packet[(pnOffset + 4)..<(pnOffset + 20)])) else { return false }
        var header = Array(packet[0..<pnOffset])
        header[0] ^= mask.0 & 0x0f
        let pnLength = Int(header[0] & 3) + 1
        let masks = [mask.1, mask.2, mask.3, mask.4]
        var truncated: UInt64 = 0
        for k in 0..<pnLength {
            let byte = packet[pnOffset + k] ^ masks[k]
            header.append(byte)
            truncated = truncated << 8 | UInt64(byte)
        }
        let pn = decodePacketNumber(largest: nil, truncated: truncated, bits: pnLength * 8)
        let sealed = UnsafeRawBufferPointer(rebasing: packet[(pnOffset + pnLength)...])
        var out = [UInt8](repeating: 0, count: sealed.count)
        return header.withUnsafeBytes { h in
            out.withUnsafeMutableBytes { keys.open(packetNumber: pn, header: h, sealed: sealed, into: $0) != nil }
        }
    }
}
