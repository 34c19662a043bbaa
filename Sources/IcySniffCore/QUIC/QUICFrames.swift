/// The frames of a decrypted QUIC packet (RFC 9000 §19, RFC 9221's DATAGRAM), read as values:
/// the session decides what a frame means (`QUICConnectionSession.frames`), this parser only how
/// it is laid out, as quic-go's `wire.FrameParser` stands apart from its connection.
///
/// Input: a packet's plaintext. Output: `QUICFrame`s in order; the data they carry (CRYPTO and
/// STREAM bytes, a new connection ID and its reset token) points into the plaintext, valid as
/// long as it is. A frame cut short, or of a type that cannot be skipped without knowing its
/// layout, ends the packet: what follows it cannot be found.
enum QUICFrame {
    /// PADDING, PING, HANDSHAKE_DONE, ACK, NEW_TOKEN, flow control, PATH_CHALLENGE/RESPONSE and
    /// the rest whose content the analysis does not use: read over.
    case other
    case resetStream(id: UInt64, finalSize: UInt64)
    case stopSending(id: UInt64)
    case crypto(offset: UInt64, data: UnsafeRawBufferPointer)
    case stream(id: UInt64, offset: UInt64, data: UnsafeRawBufferPointer, fin: Bool)
    /// A connection ID the peer may send to from now on, and its stateless reset token.
    case newConnectionID(cid: UnsafeRawBufferPointer, resetToken: UnsafeRawBufferPointer)
    /// CONNECTION_CLOSE: by the transport (0x1c) or by the application (0x1d).
    case connectionClose(application: Bool)
}

/// The frame types by name (RFC 9000 §19 table 3; RFC 9221 §4).
enum QUICFrameType {
    static let padding: UInt64 = 0x00, ping: UInt64 = 0x01
    static let ack: UInt64 = 0x02, ackECN: UInt64 = 0x03
    static let resetStream: UInt64 = 0x04, stopSending: UInt64 = 0x05
    static let crypto: UInt64 = 0x06, newToken: UInt64 = 0x07
    /// 0x08...0x0f: STREAM, with the OFF (0x04), LEN (0x02) and FIN (0x01) bits.
    static let streams: ClosedRange<UInt64> = 0x08...0x0f
    static let streamOffset: UInt64 = 0x04, streamLength: UInt64 = 0x02, streamFin: UInt64 = 0x01
    static let maxData: UInt64 = 0x10, maxStreamData: UInt64 = 0x11
    static let maxStreamsBidi: UInt64 = 0x12, maxStreamsUni: UInt64 = 0x13
    static let dataBlocked: UInt64 = 0x14, streamDataBlocked: UInt64 = 0x15
    static let streamsBlockedBidi: UInt64 = 0x16, streamsBlockedUni: UInt64 = 0x17
    static let newConnectionID: UInt64 = 0x18, retireConnectionID: UInt64 = 0x19
    static let pathChallenge: UInt64 = 0x1a, pathResponse: UInt64 = 0x1b
    static let connectionClose: UInt64 = 0x1c, applicationClose: UInt64 = 0x1d
    static let handshakeDone: UInt64 = 0x1e
    /// DATAGRAM without a length (to the end of the packet) and with one.
    static let datagram: UInt64 = 0x30, datagramWithLength: UInt64 = 0x31
}

/// Reads a plaintext's frames one at a time (`next()`); nil at its end or at a frame that ends it.
struct QUICFrameParser: IteratorProtocol, Sequence {
    private var r: QUICReader

    init(_ plaintext: UnsafeRawBufferPointer) { r = QUICReader(plaintext) }

    /// Varints that follow the type and carry nothing the analysis reads, by frame type.
    @inline(__always)
    private static func skippedVarints(_ type: UInt64) -> Int? {
        switch type {
        case QUICFrameType.maxData, QUICFrameType.maxStreamsBidi, QUICFrameType.maxStreamsUni, QUICFrameType.dataBlocked,
             QUICFrameType.streamsBlockedBidi, QUICFrameType.streamsBlockedUni, QUICFrameType.retireConnectionID:
            return 1
        case QUICFrameType.maxStreamData, QUICFrameType.streamDataBlocked:
            return 2
        default:
            return nil
        }
    }

    /// Inlined into the session's loop: a packet of small STREAM frames (a transfer split into
    /// 1-byte frames, gen.py's tinyooo) spent 8 % more as a call per frame.
    @inline(__always)
    mutating func next() -> QUICFrame? {
        while r.remaining > 0 {
            guard let type = r.varint() else { return nil }
            switch type {
            case QUICFrameType.padding:
                r.skipZeros()
                continue
            case QUICFrameType.ping, QUICFrameType.handshakeDone:
                continue
            case QUICFrameType.ack, QUICFrameType.ackECN:
                guard r.varint() != nil, r.varint() != nil, let ranges = r.varint(), r.varint() != nil else { return nil }
                for _ in 0..<Swift.min(ranges, 1 << 20) { guard r.varint() != nil, r.varint() != nil else { return nil } }
                if type == QUICFrameType.ackECN { for _ in 0..<3 { guard r.varint() != nil else { return nil } } }
                return .other
            case QUICFrameType.resetStream:
                guard let id = r.varint(), r.varint() != nil, let size = r.varint() else { return nil }
                return .resetStream(id: id, finalSize: size)
            case QUICFrameType.stopSending:
                guard let id = r.varint(), r.varint() != nil else { return nil }
                return .stopSending(id: id)
            case QUICFrameType.crypto:
                guard let offset = r.varint(), let data = r.vector() else { return nil }
                return .crypto(offset: offset, data: data)
            case QUICFrameType.newToken:
                guard r.vector() != nil else { return nil }
                return .other
            case QUICFrameType.streams:
                guard let id = r.varint() else { return nil }
                var offset: UInt64 = 0
                if type & QUICFrameType.streamOffset != 0 { guard let o = r.varint() else { return nil }; offset = o }
                let data: UnsafeRawBufferPointer
                if type & QUICFrameType.streamLength != 0 { guard let d = r.vector() else { return nil }; data = d } else { data = r.take(r.remaining)! }
                return .stream(id: id, offset: offset, data: data, fin: type & QUICFrameType.streamFin != 0)
            case QUICFrameType.newConnectionID:
                guard r.varint() != nil, r.varint() != nil, let n = r.u8(), n <= 20, let cid = r.take(Int(n)),
                      let token = r.take(16) else { return nil }
                return .newConnectionID(cid: cid, resetToken: token)
            case QUICFrameType.pathChallenge, QUICFrameType.pathResponse:
                guard r.take(8) != nil else { return nil }
                return .other
            case QUICFrameType.connectionClose, QUICFrameType.applicationClose:
                guard r.varint() != nil else { return nil }
                if type == QUICFrameType.connectionClose { guard r.varint() != nil else { return nil } }
                guard r.vector() != nil else { return nil }
                return .connectionClose(application: type == QUICFrameType.applicationClose)
            case QUICFrameType.datagramWithLength:
                guard r.vector() != nil else { return nil }
                return .other
            default:
                // DATAGRAM without a length runs to the end of the packet; an unknown type
                // cannot be read over.
                guard let n = Self.skippedVarints(type) else { return nil }
                for _ in 0..<n { guard r.varint() != nil else { return nil } }
                return .other
            }
        }
        return nil
    }
}
