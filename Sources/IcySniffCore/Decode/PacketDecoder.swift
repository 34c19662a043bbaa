extension UnsafeRawBufferPointer {
    @inline(__always) func u8(_ i: Int) -> UInt8 { load(fromByteOffset: i, as: UInt8.self) }
    @inline(__always) func be16(_ i: Int) -> UInt16 { UInt16(bigEndian: loadUnaligned(fromByteOffset: i, as: UInt16.self)) }
    @inline(__always) func le16(_ i: Int) -> UInt16 { UInt16(littleEndian: loadUnaligned(fromByteOffset: i, as: UInt16.self)) }
    @inline(__always) func be32(_ i: Int) -> UInt32 { UInt32(bigEndian: loadUnaligned(fromByteOffset: i, as: UInt32.self)) }
    @inline(__always) func be64(_ i: Int) -> UInt64 { UInt64(bigEndian: loadUnaligned(fromByteOffset: i, as: UInt64.self)) }
    @inline(__always) func slice(from start: Int, count: Int) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(rebasing: self[start..<(start + count)])
    }
}

/// Decodes link, IP and TCP/UDP headers in place, with one bounds check per header.
///
/// Input: `CapturedPacket`. Output: `DecodeOutcome`, whose views borrow the packet (or, for a
/// reassembled IP datagram, the decoder's fragment buffer) until the next call.
public struct PacketDecoder {
    /// The link type of the packets decoded next (set per packet for a pcapng file whose
    /// interfaces differ).
    public var linkType: LinkType
    private let fragments = FragmentReassembler()
    /// MPLS payloads taken for Ethernet by their first nibble, since the last `takeNotes`.
    var guessedMPLSPayloads = 0

    public init(linkType: LinkType) { self.linkType = linkType }

    public mutating func decode(_ packet: CapturedPacket) -> DecodeOutcome {
        let b = packet.bytes
        let wire = WireContext(missing: max(0, packet.wireLength - b.count), timestamp: packet.timestamp)
        switch linkType {
        case .ethernet:
            return decodeEthernet(b, at: 0, wire, depth: 0)
        case .null, .loop:
            guard b.count >= 4 else { return .malformed(.truncatedLinkHeader) }
            let family = linkType == .loop ? b.be32(0) : (b.u8(0) != 0 ? UInt32(b.u8(0)) : b.be32(0))
            switch family {
            case 2: return decodeIPv4(b, at: 4, wire, depth: 0)
            case 10, 24, 28, 30: return decodeIPv6(b, at: 4, wire, depth: 0)   // AF_INET6 on Linux, NetBSD/OpenBSD, FreeBSD, Darwin
            default: return .skipped
            }
        case .raw:
            return decodeIPByVersion(b, at: 0, wire, depth: 0)
        case .ipv4: return decodeIPv4(b, at: 0, wire, depth: 0)
        case .ipv6: return decodeIPv6(b, at: 0, wire, depth: 0)
        case .linuxSLL:
            guard b.count >= 16 else { return .malformed(.truncatedLinkHeader) }
            return decodeEtherType(b.be16(14), b, at: 16, wire, depth: 0)
        case .linuxSLL2:
            guard b.count >= 20 else { return .malformed(.truncatedLinkHeader) }
            return decodeEtherType(b.be16(0), b, at: 20, wire, depth: 0)
        case .nflog:
            return decodeNFLOG(b, wire)
        case .ppp:
            return decodePPP(b, at: 0, wire, depth: 0)
        case .pppoe:
            return decodePPPoESession(b, at: 0, wire, depth: 0)
        case .ciscoHDLC:
            guard b.count >= 4 else { return .malformed(.truncatedLinkHeader) }
            return decodeEtherType(b.be16(2), b, at: 4, wire, depth: 0)
        case .ieee80211, .radiotap, .ppi, .prism, .avs:
            return decodeWireless(b, wire)
        case .arcnet, .arcnetLinux:
            return decodeARCNET(b, linux: linkType == .arcnetLinux, wire)
        case .unsupported:
            return .skippedNamed(.unsupportedLinkType)
        }
    }

    /// ARCNET (the link types tcpdump's tests still carry): source and destination station
    /// bytes (Linux adds a 2-byte offset), the protocol byte, and for the RFC 1201 protocols a
    /// split flag and sequence number (in BSD's, an exception packet, flag 0xFF, repeats them
    /// after 4 bytes more), as tcpdump's print-arcnet.c reads them. IP (RFC 1201's 212, RFC 1051's 240)
    /// and IPv6 (196) are decoded; a split packet's pieces are not joined (its first piece is
    /// taken as cut short, the others skipped, named); ARP and the rest are skipped.
    mutating func decodeARCNET(_ b: UnsafeRawBufferPointer, linux: Bool, _ wire: WireContext) -> DecodeOutcome {
        let typeAt = linux ? 4 : 2
        guard b.count > typeAt else { return .malformed(.truncatedLinkHeader) }
        let type = b.u8(typeAt)
        var offset = typeAt + 1
        let rfc1051 = type == 240 || type == 241 || type == 0x80
        if !rfc1051 && linux {
            // Linux hands over whole packets: the split flag and sequence number are skipped.
            offset += 3
        } else if !rfc1051 {
            guard b.count >= offset + 3 else { return .malformed(.truncatedLinkHeader) }
            var flag = b.u8(offset)
            offset += 3
            if flag == 0xFF {
                guard b.count >= offset + 4 else { return .malformed(.truncatedLinkHeader) }
                flag = b.u8(offset + 1)
                offset += 4
            }
            if flag != 0 { return .skippedNamed(.unknownLinkPayload) }
        }
        switch type {
        case 212, 240: return decodeIPv4(b, at: offset, wire, depth: 0)
        case 196: return decodeIPv6(b, at: offset, wire, depth: 0)
        default: return .skipped
        }
    }

    /// An Ethernet frame at `start`: 802.3 length field with LLC/SNAP, then 802.1Q / 802.1ad
    /// (QinQ) and the old 0x9100 tags, stacked.
    @inline(__always)
    mutating func decodeEthernet(_ b: UnsafeRawBufferPointer, at start: Int, _ wire: WireContext, depth: Int) -> DecodeOutcome {
        guard b.count >= start + 14 else { return .malformed(start == 0 ? .truncatedLinkHeader : .truncatedTunnelHeader) }
        var etherType = b.be16(start + 12)
        var offset = start + 14
        if etherType < 0x0600 {
            // IEEE 802.3 length field: LLC, possibly SNAP with an EtherType.
            guard b.count >= offset + 8 else { return .malformed(.truncatedLinkHeader) }
            guard b.u8(offset) == 0xAA, b.u8(offset + 1) == 0xAA, b.u8(offset + 2) == 0x03 else { return .skipped }
            etherType = b.be16(offset + 6)
            offset += 8
        }
        return decodeEtherType(etherType, b, at: offset, wire, depth: depth)
    }

    /// What an EtherType announces at `offset`: IP, VLAN tags, MPLS, PPPoE, or Ethernet itself
    /// (transparent bridging). The one place an EtherType is dispatched.
    @inline(__always)
    mutating func decodeEtherType(_ type: UInt16, _ b: UnsafeRawBufferPointer, at start: Int, _ wire: WireContext, depth: Int) -> DecodeOutcome {
        var etherType = type
        var offset = start
        while etherType == 0x8100 || etherType == 0x88A8 || etherType == 0x9100 {
            guard b.count >= offset + 4 else { return .malformed(.truncatedLinkHeader) }
            etherType = b.be16(offset + 2)
            offset += 4
        }
        switch etherType {
        case 0x0800: return decodeIPv4(b, at: offset, wire, depth: depth)
        case 0x86DD: return decodeIPv6(b, at: offset, wire, depth: depth)
        case 0x8847, 0x8848: return decodeMPLS(b, at: offset, wire, depth: depth)
        case 0x8864: return decodePPPoESession(b, at: offset, wire, depth: depth)
        case 0x6558:
            guard depth < Self.maxEncapsulationDepth else { return .malformed(.encapsulationTooDeep) }
            return decodeEthernet(b, at: offset, wire, depth: depth + 1)
        case _ where Self.knownNonIP.contains(etherType): return .skipped
        default: return .skippedNamed(.unknownLinkPayload)
        }
    }

    /// An IP packet whose version is read from its first nibble (raw IP links, tunnels that do
    /// not say which IP they carry).
    @inline(__always)
    mutating func decodeIPByVersion(_ b: UnsafeRawBufferPointer, at start: Int, _ wire: WireContext, depth: Int) -> DecodeOutcome {
        guard b.count > start else { return .malformed(start == 0 ? .truncatedLinkHeader : .truncatedIPHeader) }
        switch b.u8(start) >> 4 {
        case 4: return decodeIPv4(b, at: start, wire, depth: depth)
        case 6: return decodeIPv6(b, at: start, wire, depth: depth)
        default: return .malformed(.truncatedIPHeader)
        }
    }

    /// Link-layer protocols every LAN carries that are not IP and not an anomaly: ARP, RARP,
    /// EAPOL (802.1X), LLDP, MACsec, PTP, Ethernet loopback. They are skipped without a name;
    /// any other EtherType is counted as `unknown_link_payload`.
    /// PPPoE discovery (0x8863) is skipped the same way; its session stage (0x8864) is decoded.
    static let knownNonIP: Set<UInt16> = [0x0806, 0x8035, 0x888E, 0x88CC, 0x88E5, 0x88F7, 0x9000, 0x8863]

    /// Encapsulations decoded inside one another at most (VLAN tags and MPLS labels not counted):
    /// deeper packets are counted as `encapsulation_too_deep`, never followed further.
    static let maxEncapsulationDepth = 8

    /// IP datagrams whose fragments never all arrived (timed out, or still waiting when
    /// `flushFragments` is called), since the last call. Counted as `fragment_reassembly_timeout`.
    public mutating func takeExpiredFragments() -> Int { fragments.takeExpired() }
    /// The QUIC versions of the long-header packets that began datagrams dropped for a lost fragment.
    mutating func takeLostQUICVersions() -> [UInt32] { fragments.takeLostQUICVersions() }

    /// Counts the decoder noted on packets it still decoded (`mpls_payload_guessed`), since the
    /// last call.
    public mutating func takeNotes() -> [(Weird, Int)] {
        defer { guessedMPLSPayloads = 0 }
        return guessedMPLSPayloads > 0 ? [(.mplsPayloadGuessed, guessedMPLSPayloads)] : []
    }

    /// The end of the capture: datagrams still waiting for fragments will never complete.
    public mutating func flushFragments() { fragments.expireAll() }

    /// NFLOG: a 4-byte header, then TLVs (little-endian length and type, padded to 4 bytes);
    /// type 9 (NFULA_PAYLOAD) holds the IP packet.
    private mutating func decodeNFLOG(_ b: UnsafeRawBufferPointer, _ wire: WireContext) -> DecodeOutcome {
        guard b.count >= 4 else { return .malformed(.truncatedLinkHeader) }
        let family = b.u8(0)
        var offset = 4
        while offset + 4 <= b.count {
            let length = Int(b.le16(offset))
            let type = b.le16(offset + 2) & 0x7fff
            guard length >= 4, offset + length <= b.count else { return .malformed(.truncatedLinkHeader) }
            if type == 9 {
                let payload = b.slice(from: offset + 4, count: length - 4)
                return family == 10 ? decodeIPv6(payload, at: 0, wire, depth: 0) : decodeIPv4(payload, at: 0, wire, depth: 0)
            }
            offset += (length + 3) & ~3
        }
        return .skipped
    }

    mutating func decodeIPv4(_ b: UnsafeRawBufferPointer, at start: Int, _ wire: WireContext, depth: Int) -> DecodeOutcome {
        let wireMissing = wire.missing, timestamp = wire.timestamp
        guard b.count >= start + 20 else { return .malformed(.truncatedIPHeader) }
        let versionIHL = b.u8(start)
        guard versionIHL >> 4 == 4 else { return .malformed(.truncatedIPHeader) }
        let headerLength = Int(versionIHL & 0x0f) * 4
        guard headerLength >= 20 else { return .malformed(.badIPHeaderLength) }
        guard b.count >= start + headerLength else { return .malformed(.truncatedIPHeader) }
        var totalLength = Int(b.be16(start + 2))
        if totalLength == 0 { totalLength = b.count - start + wireMissing }   // TSO: length left 0
        guard totalLength >= headerLength else { return .malformed(.badIPTotalLength) }
        let proto = b.u8(start + 9)
        let src = IPAddress(ipv4: b.be32(start + 12))
        let dst = IPAddress(ipv4: b.be32(start + 16))
        let fragmentField = b.be16(start + 6)
        let moreFragments = fragmentField & 0x2000 != 0
        let fragmentOffset = Int(fragmentField & 0x1fff) * 8
        // Ethernet padding lies beyond totalLength and is dropped here.
        let available = min(b.count - start, totalLength)
        let missing = totalLength - available
        let payload = b.slice(from: start + headerLength, count: available - headerLength)
        if moreFragments || fragmentOffset > 0 {
            if missing > 0 { return .malformed(.snaplenTruncated) }
            let key = FragmentKey(source: src, destination: dst, identification: UInt32(b.be16(start + 4)), proto: proto)
            switch fragments.add(key: key, offset: fragmentOffset, more: moreFragments, payload: payload, timestamp: timestamp) {
            case .incomplete: return .skipped
            case .failed(let weird): return .malformed(weird)
            case .complete(let whole):
                return decodeTransport(proto: proto, whole, source: src, destination: dst, missing: 0, timestamp: timestamp, depth: depth)
            }
        }
        return decodeTransport(proto: proto, payload, source: src, destination: dst, missing: missing, timestamp: timestamp, depth: depth)
    }

    mutating func decodeIPv6(_ b: UnsafeRawBufferPointer, at start: Int, _ wire: WireContext, depth: Int) -> DecodeOutcome {
        let wireMissing = wire.missing, timestamp = wire.timestamp
        guard b.count >= start + 40 else { return .malformed(.truncatedIPHeader) }
        guard b.u8(start) >> 4 == 6 else { return .malformed(.truncatedIPHeader) }
        var payloadLength = Int(b.be16(start + 4))
        if payloadLength == 0 { payloadLength = b.count - start - 40 + wireMissing }  // jumbogram or TSO
        var next = b.u8(start + 6)
        let src = IPAddress(high: b.be64(start + 8), low: b.be64(start + 16))
        let dst = IPAddress(high: b.be64(start + 24), low: b.be64(start + 32))
        let end = start + 40 + payloadLength
        let availableEnd = min(b.count, end)
        var offset = start + 40
        var fragment: (offset: Int, more: Bool, id: UInt32)? = nil
        // Extension headers: hop-by-hop (0), routing (43), fragment (44), destination options (60), AH (51).
        while true {
            switch next {
            case 0, 43, 60:
                guard offset + 8 <= availableEnd else { return .malformed(.badIPv6ExtensionHeader) }
                let length = (Int(b.u8(offset + 1)) + 1) * 8
                next = b.u8(offset)
                offset += length
            case 51:
                guard offset + 8 <= availableEnd else { return .malformed(.badIPv6ExtensionHeader) }
                let length = (Int(b.u8(offset + 1)) + 2) * 4
                next = b.u8(offset)
                offset += length
            case 44:
                guard offset + 8 <= availableEnd else { return .malformed(.badIPv6ExtensionHeader) }
                let field = b.be16(offset + 2)
                fragment = (Int(field & 0xfff8), field & 1 != 0, b.be32(offset + 4))
                next = b.u8(offset)
                offset += 8
            default:
                guard offset <= availableEnd else { return .malformed(.badIPv6ExtensionHeader) }
                let missing = end - availableEnd
                let payload = b.slice(from: offset, count: availableEnd - offset)
                if let fragment, fragment.more || fragment.offset > 0 {
                    if missing > 0 { return .malformed(.snaplenTruncated) }
                    let key = FragmentKey(source: src, destination: dst, identification: fragment.id, proto: next)
                    switch fragments.add(key: key, offset: fragment.offset, more: fragment.more, payload: payload, timestamp: timestamp) {
                    case .incomplete: return .skipped
                    case .failed(let weird): return .malformed(weird)
                    case .complete(let whole):
                        return decodeTransport(proto: next, whole, source: src, destination: dst, missing: 0, timestamp: timestamp, depth: depth)
                    }
                }
                return decodeTransport(proto: next, payload, source: src, destination: dst, missing: missing, timestamp: timestamp, depth: depth)
            }
            if offset > availableEnd { return .malformed(.badIPv6ExtensionHeader) }
        }
    }

    @inline(__always)
    private mutating func decodeTransport(proto: UInt8, _ b: UnsafeRawBufferPointer, source: IPAddress, destination: IPAddress,
                                          missing: Int, timestamp: Timestamp, depth: Int) -> DecodeOutcome {
        switch proto {
        case 6:
            guard b.count >= 20 else { return .malformed(.truncatedTCPHeader) }
            let dataOffset = Int(b.u8(12) >> 4) * 4
            guard dataOffset >= 20 else { return .malformed(.badTCPHeaderLength) }
            guard b.count >= dataOffset else {
                return missing > 0 ? .malformed(.snaplenTruncated) : .malformed(.badTCPHeaderLength)
            }
            return .tcp(TCPSegment(
                source: Endpoint(address: source, port: b.be16(0)),
                destination: Endpoint(address: destination, port: b.be16(2)),
                sequence: b.be32(4), acknowledgement: b.be32(8),
                flags: TCPFlags(rawValue: b.u8(13) & 0x1f), window: b.be16(14),
                payload: b.slice(from: dataOffset, count: b.count - dataOffset),
                missingPayload: missing, timestamp: timestamp))
        case 17:
            guard b.count >= 8 else { return .malformed(.truncatedUDPHeader) }
            let sourcePort = b.be16(0), destinationPort = b.be16(2)
            let payload = b.slice(from: 8, count: b.count - 8)
            if let tunnel = UDPTunnel(sourcePort: sourcePort, destinationPort: destinationPort),
               let inner = decodeUDPTunnel(tunnel, payload, WireContext(missing: missing, timestamp: timestamp), depth: depth) {
                return inner
            }
            return .udp(UDPDatagram(
                source: Endpoint(address: source, port: sourcePort),
                destination: Endpoint(address: destination, port: destinationPort),
                payload: payload, timestamp: timestamp))
        case 58 where b.count >= 24 && (b.u8(0) == 135 || b.u8(0) == 136) && b.u8(1) == 0:
            // ICMPv6 Neighbor Solicitation (135) or Advertisement (136): its target address.
            return .neighbor(NeighborDiscovery(advertisement: b.u8(0) == 136, source: source,
                                               target: IPAddress(high: b.be64(8), low: b.be64(16)), timestamp: timestamp))
        case 4, 41, 47:
            // IP in IP (RFC 2003), IPv6 in IPv4 / IPv4 in IPv6 (6in4, RFC 4213), GRE (RFC 2784).
            guard depth < Self.maxEncapsulationDepth else { return .malformed(.encapsulationTooDeep) }
            let wire = WireContext(missing: missing, timestamp: timestamp)
            switch proto {
            case 4: return decodeIPv4(b, at: 0, wire, depth: depth + 1)
            case 41: return decodeIPv6(b, at: 0, wire, depth: depth + 1)
            default: return decodeGRE(b, wire, depth: depth + 1)
            }
        default:
            return .skipped
        }
    }
}
