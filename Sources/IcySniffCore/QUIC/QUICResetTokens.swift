/// The stateless reset tokens each direction's sender issued (RFC 9000 §10.3: the server's
/// transport parameter, NEW_CONNECTION_ID frames; read with keys only), and the test every
/// short-header packet gets: whether it ends with one of them (the sender lost the connection's
/// state). At most 64 a direction: an endpoint keeps a handful of CIDs
/// (active_connection_id_limit).
struct QUICResetTokens {
    private var tokens = PerDirection<[ResetToken]>([])
    /// A packet ended with one: the connection ended in a stateless reset.
    private(set) var sawReset = false

    mutating func add(_ token: UnsafeRawBufferPointer, from direction: Direction) {
        add(ResetToken(token), from: direction)
    }

    mutating func add(_ t: ResetToken, from direction: Direction) {
        guard !tokens[direction].contains(t), tokens[direction].count < 64 else { return }
        tokens[direction].append(t)
    }

    /// A short-header packet that ends with a token its sender issued: not a packet at all, but
    /// the sender saying it lost the connection (not counted as one that failed to decrypt).
    mutating func isReset(_ packet: UnsafeRawBufferPointer, from direction: Direction) -> Bool {
        guard ends(packet, from: direction) else { return false }
        sawReset = true
        return true
    }

    /// Whether `packet` (short header, at least 21 bytes) ends with a token `direction`'s sender issued.
    private func ends(_ packet: UnsafeRawBufferPointer, from direction: Direction) -> Bool {
        guard !tokens[direction].isEmpty, packet.count >= 21, packet[0] & 0x80 == 0 else { return false }
        return tokens[direction].contains(ResetToken(UnsafeRawBufferPointer(rebasing: packet[(packet.count - 16)...])))
    }
}

/// A stateless reset token (16 bytes) as two words: compared per packet against the few a
/// connection's peer issued.
struct ResetToken: Equatable {
    var a: UInt64 = 0, b: UInt64 = 0

    init(_ bytes: UnsafeRawBufferPointer) {
        var words: (UInt64, UInt64) = (0, 0)
        withUnsafeMutableBytes(of: &words) { $0.copyMemory(from: UnsafeRawBufferPointer(rebasing: bytes.prefix(16))) }
        (a, b) = words
    }
}
