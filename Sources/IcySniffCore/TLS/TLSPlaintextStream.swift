/// A decrypted TLS connection's plaintext as the byte stream of the session it carries — HTTP/2
/// (ALPN h2, or its preface), else HTTP/1.x — made with the first plaintext and fed
/// `StreamHandler`'s calls with each direction's plaintext offsets, as reassembly feeds a TCP
/// connection's session its bytes.
///
/// Input: plaintext and gaps per direction, in the capture's order. Output: the inner session's
/// transactions.
final class TLSPlaintextStream {
    private(set) var session: (any ConnectionSession)? = nil
    /// Where records are decrypted to, one at a time (the inner session borrows it for a call);
    /// made with the first record decrypted, freed with the connection.
    var buffer: UnsafeMutableRawBufferPointer {
        if let scratch { return scratch }
        let made = UnsafeMutableRawBufferPointer.allocate(byteCount: TLSRecordReader.maxRecordLength, alignment: 16)
        scratch = made
        return made
    }
    private var scratch: UnsafeMutableRawBufferPointer? = nil
    /// Plaintext handed to the inner session so far, per direction.
    private var offsets = PerDirection<UInt64>(0)
    private unowned let connection: Connection
    private unowned let emitter: TransactionEmitter
    private let options: HTTPParserOptions

    init(connection: Connection, emitter: TransactionEmitter, options: HTTPParserOptions) {
        self.connection = connection
        self.emitter = emitter
        self.options = options
    }

    deinit { scratch?.deallocate() }

    /// Plaintext application data; `alpn`: what the handshake negotiated.
    func received(_ plaintext: UnsafeRawBufferPointer, at ts: Timestamp, from direction: Direction, alpn: String?) {
        guard !plaintext.isEmpty else { return }
        let inner = session ?? makeSession(for: plaintext, alpn: alpn)
        inner.received(StreamChunk(offset: offsets[direction], bytes: plaintext, timestamp: ts), from: direction, on: connection)
        offsets[direction] &+= UInt64(plaintext.count)
    }

    /// Plaintext never seen (a record lost, the framing lost): a gap, once there is a session.
    func missed(_ length: UInt64, at ts: Timestamp, from direction: Direction) {
        guard length > 0, let session else { return }
        session.missed(StreamGap(offset: offsets[direction], length: length, timestamp: ts), from: direction, on: connection)
        offsets[direction] &+= length
    }

    private func makeSession(for plaintext: UnsafeRawBufferPointer, alpn: String?) -> any ConnectionSession {
        let made: any ConnectionSession
        if alpn == "h2" || plaintext.starts(with: HTTP2FrameHeader.preface.prefix(16)) {
            made = HTTP2Session(connection: connection, emitter: emitter, options: options, scheme: "https", expectsPreface: true)
        } else {
            made = HTTP1Session(connection: connection, emitter: emitter, options: options, scheme: "https")
        }
        session = made
        return made
    }
}
