/// What every layer of one packet shares: the bytes the snaplen cut off its end, and its time.
struct WireContext {
    var missing: Int
    var timestamp: Timestamp
}

/// Tunnels carried in UDP, recognised by their IANA port on either side (and then by their
/// header: a datagram that does not parse as the tunnel stays a plain UDP datagram).
enum UDPTunnel {
    case vxlan      // RFC 7348: 4789, and 8472 (Linux's port before IANA's)
    case geneve     // RFC 8926: 6081
    case gtpU       // 3GPP TS 29.281: 2152 (a mobile carrier's core)
    case teredo     // RFC 4380: 3544
    case l2tp       // RFC 2661 (L2TPv2): 1701, PPP inside (a carrier's or a VPN's access link)

    @inline(__always)
    init?(sourcePort: UInt16, destinationPort: UInt16) {
        // One comparison for the common case: neither port is a tunnel's.
        func kind(_ port: UInt16) -> UDPTunnel? {
            switch port {
            case 4789, 8472: return .vxlan
            case 6081: return .geneve
            case 2152: return .gtpU
            case 3544: return .teredo
            case 1701: return .l2tp
            default: return nil
            }
        }
        guard let k = kind(destinationPort) ?? kind(sourcePort) else { return nil }
        self = k
    }
}

/// Encapsulations: MPLS, PPPoE and PPP, GRE with ERSPAN, and the UDP tunnels. Each decodes its
/// header and hands what it carries back to the one dispatcher of its kind (`decodeEtherType`,
/// `decodeEthernet`, `decodeIPByVersion`), one level deeper; `maxEncapsulationDepth` bounds the
/// nesting, so a crafted packet cannot recurse without end.
extension PacketDecoder {
    /// An MPLS label stack (RFC 3032), in Ethernet, PPP or GRE. The payload's protocol is not
    /// written anywhere: it is guessed by its first nibble as every analyzer does (4: IPv4, 6:
    /// IPv6; 0: a pseudowire control word, RFC 4385, then Ethernet; else Ethernet), and the
    /// Ethernet guesses are counted as `mpls_payload_guessed`.
    mutating func decodeMPLS(_ b: UnsafeRawBufferPointer, at start: Int, _ wire: WireContext, depth: Int) -> DecodeOutcome {
        guard depth < Self.maxEncapsulationDepth else { return .malformed(.encapsulationTooDeep) }
        var offset = start
        var labels = 0
        while true {
            guard b.count >= offset + 4 else { return .malformed(.truncatedTunnelHeader) }
            let bottom = b.u8(offset + 2) & 1 == 1
            offset += 4
            labels += 1
            if bottom { break }
            guard labels < 16 else { return .malformed(.encapsulationTooDeep) }
        }
        guard b.count > offset else { return .malformed(.truncatedTunnelHeader) }
        switch b.u8(offset) >> 4 {
        case 4: return decodeIPv4(b, at: offset, wire, depth: depth + 1)
        case 6: return decodeIPv6(b, at: offset, wire, depth: depth + 1)
        case 0:
            guessedMPLSPayloads += 1
            return decodeEthernet(b, at: offset + 4, wire, depth: depth + 1)
        default:
            guessedMPLSPayloads += 1
            return decodeEthernet(b, at: offset, wire, depth: depth + 1)
        }
    }

    /// PPPoE's session stage (RFC 2516): version/type 0x11, code 0, session id, length, then a
    /// PPP protocol field, which some access concentrators compress to one byte (RFC 1661 §6.5:
    /// `21` for IPv4 instead of `00 21`).
    mutating func decodePPPoESession(_ b: UnsafeRawBufferPointer, at start: Int, _ wire: WireContext, depth: Int) -> DecodeOutcome {
        guard depth < Self.maxEncapsulationDepth else { return .malformed(.encapsulationTooDeep) }
        guard b.count >= start + 7 else { return .malformed(.truncatedTunnelHeader) }
        guard b.u8(start) == 0x11, b.u8(start + 1) == 0 else { return .skippedNamed(.unknownTunnelPayload) }
        guard let (proto, offset) = Self.pppProtocolField(b, at: start + 6) else { return .malformed(.truncatedTunnelHeader) }
        return decodePPPProtocol(proto, b, at: offset, wire, depth: depth + 1)
    }

    /// A PPP protocol field at `offset`: one byte when compressed (its low bit set: RFC 1661
    /// §6.5), else two; with the offset after it. Nil when cut short.
    static func pppProtocolField(_ b: UnsafeRawBufferPointer, at offset: Int) -> (UInt16, Int)? {
        guard b.count > offset else { return nil }
        if b.u8(offset) & 1 == 1 { return (UInt16(b.u8(offset)), offset + 1) }
        guard b.count >= offset + 2 else { return nil }
        return (b.be16(offset), offset + 2)
    }

    /// A PPP frame (RFC 1661), with or without the HDLC-like address and control bytes (RFC 1662:
    /// 0xFF 0x03) and with a compressed one-byte protocol field (RFC 1661 §6.5). Cisco HDLC
    /// frames (address 0x0F or 0x8F, then an EtherType) show up on the same serial links.
    mutating func decodePPP(_ b: UnsafeRawBufferPointer, at start: Int, _ wire: WireContext, depth: Int) -> DecodeOutcome {
        var offset = start
        guard b.count >= offset + 2 else { return .malformed(start == 0 ? .truncatedLinkHeader : .truncatedTunnelHeader) }
        let first = b.u8(offset)
        if first == 0x0F || first == 0x8F {
            guard b.count >= offset + 4 else { return .malformed(.truncatedLinkHeader) }
            return decodeEtherType(b.be16(offset + 2), b, at: offset + 4, wire, depth: depth)
        }
        if first == 0xFF && b.u8(offset + 1) == 0x03 { offset += 2 }
        guard let (proto, after) = Self.pppProtocolField(b, at: offset) else { return .malformed(.truncatedLinkHeader) }
        return decodePPPProtocol(proto, b, at: after, wire, depth: depth)
    }

    /// A PPP protocol number: IP, IPv6 and MPLS are decoded; the link's control protocols (LCP,
    /// IPCP, authentication: 0x8000 and above) are skipped unnamed; other data is named.
    private mutating func decodePPPProtocol(_ proto: UInt16, _ b: UnsafeRawBufferPointer, at offset: Int, _ wire: WireContext, depth: Int) -> DecodeOutcome {
        switch proto {
        case 0x0021: return decodeIPv4(b, at: offset, wire, depth: depth)
        case 0x0057: return decodeIPv6(b, at: offset, wire, depth: depth)
        case 0x0281, 0x0283: return decodeMPLS(b, at: offset, wire, depth: depth)
        case 0x8000...: return .skipped
        default: return .skippedNamed(.unknownTunnelPayload)
        }
    }

    /// GRE (RFC 2784/2890, and version 1: PPTP's enhanced GRE, RFC 2637) with its optional
    /// checksum, key and sequence number; ERSPAN type I, II and III mirror sessions in it.
    mutating func decodeGRE(_ b: UnsafeRawBufferPointer, _ wire: WireContext, depth: Int) -> DecodeOutcome {
        guard b.count >= 4 else { return .malformed(.truncatedTunnelHeader) }
        let flags = b.be16(0)
        let proto = b.be16(2)
        let version = flags & 0x7
        let hasSequence = flags & 0x1000 != 0
        guard flags & 0x4000 == 0, version <= 1 else { return .skippedNamed(.unknownTunnelPayload) }  // source routing: obsolete
        var offset = 4
        if flags & 0x8000 != 0 { offset += 4 }                 // checksum + reserved
        if flags & 0x2000 != 0 { offset += 4 }                 // key (version 1: payload length + call id)
        if hasSequence { offset += 4 }
        if version == 1 && flags & 0x0080 != 0 { offset += 4 } // PPTP acknowledgement number
        guard b.count >= offset else { return .malformed(.truncatedTunnelHeader) }
        switch proto {
        case 0x880B:
            // PPTP's PPP; a GRE packet that only acknowledges carries none.
            guard b.count > offset else { return .skipped }
            return decodePPP(b, at: offset, wire, depth: depth)
        case 0x88BE:
            // ERSPAN type II carries a sequence number and an 8-byte header; type I neither.
            return decodeEthernet(b, at: hasSequence ? offset + 8 : offset, wire, depth: depth)
        case 0x22EB:
            // ERSPAN type III: a 12-byte header, and 8 more when its O bit says a platform
            // specific subheader follows.
            guard b.count >= offset + 12 else { return .malformed(.truncatedTunnelHeader) }
            let optional = b.u8(offset + 11) & 1 == 1
            return decodeEthernet(b, at: offset + 12 + (optional ? 8 : 0), wire, depth: depth)
        default:
            return decodeEtherType(proto, b, at: offset, wire, depth: depth)
        }
    }

    /// The UDP tunnels. Nil when the datagram is not that tunnel after all (a VXLAN header
    /// without its I flag, a GTP message that carries no user data, Teredo's own signalling):
    /// it is then passed on as the UDP datagram it is.
    mutating func decodeUDPTunnel(_ tunnel: UDPTunnel, _ b: UnsafeRawBufferPointer, _ wire: WireContext, depth: Int) -> DecodeOutcome? {
        guard depth < Self.maxEncapsulationDepth else { return .malformed(.encapsulationTooDeep) }
        switch tunnel {
        case .vxlan:
            guard b.count >= 8, b.u8(0) & 0x08 != 0 else { return nil }
            return decodeEthernet(b, at: 8, wire, depth: depth + 1)
        case .geneve:
            guard b.count >= 8, b.u8(0) >> 6 == 0 else { return nil }
            let length = 8 + Int(b.u8(0) & 0x3f) * 4
            guard b.count >= length else { return .malformed(.truncatedTunnelHeader) }
            return decodeEtherType(b.be16(2), b, at: length, wire, depth: depth + 1)
        case .gtpU:
            // Version 1, protocol type GTP, message 0xFF (G-PDU): user data.
            guard b.count >= 8, b.u8(0) >> 4 == 3, b.u8(1) == 0xFF else { return nil }
            let flags = b.u8(0)
            var offset = 8
            if flags & 0x07 != 0 {
                // Sequence number, N-PDU number and the next extension header's type.
                guard b.count >= 12 else { return .malformed(.truncatedTunnelHeader) }
                var next = b.u8(11)
                offset = 12
                var extensions = 0
                while next != 0 {
                    guard b.count > offset, extensions < 16 else { return .malformed(.truncatedTunnelHeader) }
                    let length = Int(b.u8(offset)) * 4
                    guard length > 0, b.count >= offset + length else { return .malformed(.truncatedTunnelHeader) }
                    next = b.u8(offset + length - 1)
                    offset += length
                    extensions += 1
                }
            }
            return decodeIPByVersion(b, at: offset, wire, depth: depth + 1)
        case .l2tp:
            // Version 2 data messages (T clear): optional length, tunnel and session ids,
            // optional Ns/Nr, optional offset padding, then a PPP frame. Control messages and
            // L2TPv3 (whose cookie length only the tunnel's setup says) stay UDP datagrams.
            guard b.count >= 6 else { return nil }
            let flags = b.be16(0)
            guard flags & 0x000F == 2, flags & 0x8000 == 0 else { return nil }
            var offset = 2 + (flags & 0x4000 != 0 ? 2 : 0) + 4 + (flags & 0x0800 != 0 ? 4 : 0)
            if flags & 0x0200 != 0 {
                guard b.count >= offset + 2 else { return .malformed(.truncatedTunnelHeader) }
                offset += 2 + Int(b.be16(offset))
            }
            guard b.count > offset else { return .malformed(.truncatedTunnelHeader) }
            return decodePPP(b, at: offset, wire, depth: depth + 1)
        case .teredo:
            var offset = 0
            // An authentication indicator (0x0001) and an origin indication (0x0000) may come first.
            if b.count >= 2 && b.u8(0) == 0 && b.u8(1) == 1 {
                guard b.count >= 4 else { return nil }
                offset = 4 + Int(b.u8(2)) + Int(b.u8(3)) + 9
            }
            if b.count >= offset + 2 && b.u8(offset) == 0 && b.u8(offset + 1) == 0 { offset += 8 }
            // A Teredo bubble or router solicitation is IPv6 too; anything else is not Teredo.
            guard b.count >= offset + 40, b.u8(offset) >> 4 == 6 else { return nil }
            return decodeIPv6(b, at: offset, wire, depth: depth + 1)
        }
    }
}
