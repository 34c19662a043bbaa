/// A long-header packet's header (RFC 9000 §17.2), read once for the three that read it: the
/// tracker (which connection: its CIDs; Version Negotiation's versions), the connection session
/// (each coalesced packet) and the key-log search (the first Handshake packet).
///
/// The invariant part (RFC 8999 §5.1: version, DCID, SCID, each CID at most 20 bytes) is read for
/// any version; the rest — the packet type, an Initial's token, the length that says where the
/// packet number starts and where the packet ends — only for a version icy-sniff reads.
struct QUICLongHeader {
    /// 0: Version Negotiation.
    let versionNumber: UInt32
    let dcid: UnsafeRawBufferPointer
    let scid: UnsafeRawBufferPointer
    /// Where what follows the SCID starts (Version Negotiation's versions; the type's fields).
    let afterCIDs: Int
    private let first: UInt8

    /// The header at the start of `bytes`; nil when its invariant part does not fit.
    init?(_ bytes: UnsafeRawBufferPointer) {
        guard let first = bytes.first, first & 0x80 != 0 else { return nil }
        var r = QUICReader(bytes, at: 1)
        guard let number = r.u32(), let dl = r.u8(), dl <= 20, let dcid = r.take(Int(dl)),
              let sl = r.u8(), sl <= 20, let scid = r.take(Int(sl)) else { return nil }
        versionNumber = number
        self.dcid = dcid
        self.scid = scid
        afterCIDs = r.at
        self.first = first
    }

    /// The version, when icy-sniff reads it (nil: unknown, or Version Negotiation). Made on each
    /// call (the tracker routes most packets by their DCID alone): read it once.
    var version: QUICVersion? { versionNumber == 0 ? nil : QUICVersion(versionNumber) }

    /// Its type, by `version`'s bits.
    func type(_ version: QUICVersion) -> QUICPacketType { version.packetType((first >> 4) & 3) }

    /// An Initial, 0-RTT or Handshake packet's extent in `bytes` (those it was read from):
    /// where its packet number starts, and its end. nil for a Retry, or when its token or
    /// length runs past the datagram.
    func extent(of type: QUICPacketType, in bytes: UnsafeRawBufferPointer) -> (pnOffset: Int, end: Int)? {
        guard type != .retry else { return nil }
        var r = QUICReader(bytes, at: afterCIDs)
        if type == .initial { guard r.vector() != nil else { return nil } }   // the token
        guard let length = r.varint(), length <= UInt64(r.remaining) else { return nil }
        return (r.at, r.at + Int(length))
    }
}

/// A short-header packet (RFC 9000 §17.3): a first byte, the receiver's connection ID, and no
/// length — it runs to the datagram's end.
enum QUICShortHeader {
    /// Where the next packet starts in a datagram that holds several short-header packets: a
    /// capture on the sending host sees UDP GSO's super-datagrams (equal segments, one after the
    /// other), and a short header carries no length. The next segment starts with a byte and the
    /// same DCID; nil: this packet runs to the end.
    static func nextSegment(_ bytes: UnsafeRawBufferPointer, dcid: [UInt8], minimum: Int) -> Int? {
        guard dcid.count >= 4, bytes.count > minimum + dcid.count else { return nil }
        let first = dcid[0]
        var i = minimum
        while i + dcid.count < bytes.count {
            if bytes[i + 1] == first, bytes[i] & 0x80 == 0,
               UnsafeRawBufferPointer(rebasing: bytes[(i + 1)..<(i + 1 + dcid.count)]).elementsEqual(dcid) { return i }
            i += 1
        }
        return nil
    }
}
