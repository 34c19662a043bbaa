/// The stateless reset tokens each direction's sender issued (RFC 9000 §10.3: the server's
/// transport parameter, NEW_CONNECTION_ID frames; read with keys only), and the test every
/// short-header packet gets: whether it ends with one of them (the sender lost the connection's
/// state). At most 64 a direction: an endpoint keeps a handful of CIDs
/// (active_connection_id_limit).
struct QUICResetTokens {
    private var tokens = PerDirection<[ResetToken]>([])
    /// One bit of 64 per token issued (`ResetToken.bit`): a packet whose last bytes' bit is not
    /// set ends with none of them, told without the loop over them (ngtcp2 issues 8 a side:
    /// the loop was 70 instructions a packet on the pipeline's thread).
    private var filter = PerDirection<UInt64>(0)
    /// A packet ended with one: the connection ended in a stateless reset.
    private(set) var sawReset = false

    mutating func add(_ token: UnsafeRawBufferPointer, from direction: Direction) {
        add(ResetToken(token), from: direction)
    }

    mutating func add(_ t: ResetToken, from direction: Direction) {
        guard !tokens[direction].contains(t), tokens[direction].count < 64 else { return }
        tokens[direction].append(t)
        filter[direction] |= t.bit
    }

    /// A short-header packet that ends with a token its sender issued: not a packet at all, but
    /// the sender saying it lost the connection (not counted as one that failed to decrypt).
    mutating func isReset(_ packet: UnsafeRawBufferPointer, from direction: Direction) -> Bool {
        guard ends(packet, from: direction) else { return false }
        sawReset = true
        return true
    }

    /// Whether `packet` (short header, at least 21 bytes) ends with a token `direction`'s sender issued.
    /// Every 1-RTT packet asks: the token is read as two words from the packet's end and the few
    /// issued are compared in place (a generic `contains` over a slice's copy cost about 100
    /// instructions a packet, 0.9 % of a decrypting HTTP/3 run).
    private func ends(_ packet: UnsafeRawBufferPointer, from direction: Direction) -> Bool {
        guard packet.count >= 21, packet[0] & 0x80 == 0 else { return false }
        let last = ResetToken(endOf: packet)
        guard filter[direction] & last.bit != 0 else { return false }
        return direction == .fromClient ? Self.holds(tokens.fromClient, last) : Self.holds(tokens.fromServer, last)
    }

    @inline(__always)
    private static func holds(_ list: [ResetToken], _ token: ResetToken) -> Bool {
        for t in list where t.a == token.a && t.b == token.b { return true }
        return false
    }
}

/// A stateless reset token (16 bytes) as two words: compared per packet against the few a
/// connection's peer issued.
struct ResetToken: Equatable {
    var a: UInt64 = 0, b: UInt64 = 0

    /// The first 16 bytes of `bytes` (zeros for those it lacks).
    init(_ bytes: UnsafeRawBufferPointer) {
        var words: (UInt64, UInt64) = (0, 0)
        withUnsafeMutableBytes(of: &words) { $0.copyMemory(from: UnsafeRawBufferPointer(rebasing: bytes.prefix(16))) }
        (a, b) = words
    }

    /// Which of 64 bits stands for the token in `QUICResetTokens`' filter: its last word's top 6.
    var bit: UInt64 { 1 << (b >> 58) }

    /// The last 16 bytes of `packet` (at least 16 long), read in place.
    @inline(__always)
    init(endOf packet: UnsafeRawBufferPointer) {
        a = packet.loadUnaligned(fromByteOffset: packet.count - 16, as: UInt64.self)
        b = packet.loadUnaligned(fromByteOffset: packet.count - 8, as: UInt64.self)
    }
}
