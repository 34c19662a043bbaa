/// A QUIC connection's CRYPTO data (RFC 9001 §4.1): per direction and packet number space, put in
/// order (`OffsetReassembler`, at most 256 KiB ahead of what was handed on) and cut into the TLS
/// handshake messages it carries (`TLSHandshakeBuffer`). aioquic's `CryptoPair` streams; what a
/// message means is the session's (`TLSHandshakeObserver`).
struct QUICCryptoStreams {
    private var data = PerDirection(PerSpace(OffsetReassembler(maxPending: 1 << 18)))
    private var messages = PerDirection(PerSpace(TLSHandshakeBuffer()))

    /// A CRYPTO frame's data: the handshake messages it completes, in order. Returned, not
    /// handled here: handling a ServerHello replays held packets, whose CRYPTO data comes back.
    mutating func received(_ bytes: UnsafeRawBufferPointer, at offset: UInt64, space: QUICSpace,
                           from direction: Direction) -> [(type: UInt8, body: ArraySlice<UInt8>)] {
        var delivered: [[UInt8]] = []
        data[direction][space].insert(bytes, at: offset, deliver: { delivered.append(Array($0)) }, lost: { _ in })
        var complete: [(type: UInt8, body: ArraySlice<UInt8>)] = []
        for chunk in delivered {
            messages[direction][space].append(chunk) { complete.append(($0, $1)) }
        }
        return complete
    }

    /// After a Retry or a Version Negotiation: the Initial space starts again at offset 0.
    mutating func restartInitial() {
        for d in Direction.allCases {
            data[d].initial = OffsetReassembler(maxPending: 1 << 18)
            messages[d].initial = TLSHandshakeBuffer()
        }
    }
}
