/// A link-layer (MAC) address: 48 bits, in the low bits of `raw`.
public struct MACAddress: Hashable, Comparable, Sendable, CustomStringConvertible {
    public var raw: UInt64

    public init(raw: UInt64) { self.raw = raw & 0xFFFF_FFFF_FFFF }

    @inline(__always)
    init(_ b: UnsafeRawBufferPointer, at i: Int) {
        raw = UInt64(b.be16(i)) << 32 | UInt64(b.be32(i + 2))
    }

    /// `aa:bb:cc:dd:ee:ff` or `aa-bb-…` (case ignored).
    public init?(text: String) {
        let parts = text.split(whereSeparator: { $0 == ":" || $0 == "-" })
        guard parts.count == 6 else { return nil }
        var v: UInt64 = 0
        for p in parts {
            guard p.count <= 2, let byte = UInt8(p, radix: 16) else { return nil }
            v = v << 8 | UInt64(byte)
        }
        raw = v
    }

    public static func < (a: MACAddress, b: MACAddress) -> Bool { a.raw < b.raw }

    /// Lower case, colon-separated.
    public var description: String {
        let hex = Array("0123456789abcdef".utf8)
        var out = [UInt8]()
        out.reserveCapacity(17)
        for i in stride(from: 40, through: 0, by: -8) {
            let byte = Int((raw >> UInt64(i)) & 0xFF)
            if i != 40 { out.append(0x3A) }
            out.append(hex[byte >> 4]); out.append(hex[byte & 0xF])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// `description`'s bytes appended to `out`, without making a String.
    public func appendText(to out: ByteBuffer) {
        let hex: StaticString = "0123456789abcdef"
        hex.withUTF8Buffer { digits in
            for i in stride(from: 40, through: 0, by: -8) {
                let byte = Int((raw >> UInt64(i)) & 0xFF)
                if i != 40 { out.append(0x3A) }
                out.append(digits[byte >> 4], digits[byte & 0xF])
            }
        }
    }

    /// One station's own address: not a group (multicast or broadcast) address, not all zeros.
    public var isIndividual: Bool { raw != 0 && (raw >> 40) & 1 == 0 }
}

/// The sender's link-layer address of a frame as captured, where its link type carries one:
/// Ethernet's source; Linux cooked captures v1 and v2 (their address field: the sender's, for
/// packets received and sent alike); 802.11 data frames (with radiotap, PPI, Prism or AVS
/// headers) the source address (SA: address 2, 3 or 4 by the To/From DS bits). Raw IP, loopback,
/// tunnels and the rest have none: nil.
public enum LinkSource {
    /// The sender's and the receiver's addresses of a frame, read with one look at the link
    /// type: what the pipeline asks of every packet. The receiver's where the frame names it
    /// (Ethernet's destination; 802.11's DA); Linux cooked captures keep only the sender's.
    @inline(__always)
    public static func addresses(of b: UnsafeRawBufferPointer, linkType: LinkType) -> (source: MACAddress?, destination: MACAddress?) {
        switch linkType {
        case .ethernet:
            guard b.count >= 14 else { return (nil, nil) }
            return (MACAddress(b, at: 6), MACAddress(b, at: 0))
        case .linuxSLL:
            guard b.count >= 16, b.be16(4) == 6 else { return (nil, nil) }
            return (MACAddress(b, at: 6), nil)
        case .linuxSLL2:
            guard b.count >= 20, b.u8(11) == 6 else { return (nil, nil) }
            return (MACAddress(b, at: 12), nil)
        case .ieee80211, .radiotap, .ppi, .prism, .avs:
            return wireless(b, linkType: linkType)
        default:
            return (nil, nil)
        }
    }

    /// The sender's address alone (`addresses`).
    @inline(__always)
    public static func address(of b: UnsafeRawBufferPointer, linkType: LinkType) -> MACAddress? {
        addresses(of: b, linkType: linkType).source
    }

    private static func wireless(_ b: UnsafeRawBufferPointer, linkType: LinkType) -> (source: MACAddress?, destination: MACAddress?) {
        guard let offset = PacketDecoder.radioHeaderLength(b, linkType), offset >= 0, b.count >= offset + 24 else { return (nil, nil) }
        // A PPI header over Ethernet: Ethernet's addresses.
        if linkType == .ppi, b.le16(4) == 1, b.le16(6) == 0, b.count >= offset + 14 {
            return (MACAddress(b, at: offset + 6), MACAddress(b, at: offset))
        }
        let control = b.u8(offset), flags = b.u8(offset + 1)
        guard control & 0x03 == 0, (control >> 2) & 0x03 == 2 else { return (nil, nil) }   // data frames
        // DA: address 1, unless the frame goes to the AP (To DS): address 3.
        let destination = flags & 0x03 == 0x01 ? MACAddress(b, at: offset + 16) : MACAddress(b, at: offset + 4)
        switch flags & 0x03 {
        case 0x00, 0x01: return (MACAddress(b, at: offset + 10), destination)        // SA: address 2
        case 0x02: return (MACAddress(b, at: offset + 16), destination)              // from the AP: address 3
        default:
            guard b.count >= offset + 30 else { return (nil, destination) }
            return (MACAddress(b, at: offset + 24), destination)                     // WDS: address 4
        }
    }
}
