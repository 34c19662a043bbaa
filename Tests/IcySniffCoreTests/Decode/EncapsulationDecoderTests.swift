import Testing
@testable import IcySniffCore

/// The decoder's edges in link layers and tunnels (issue 18); whole captures of each kind, made
/// by scapy, are in the CLI's EncapsulationTests.
@Suite struct EncapsulationDecoderTests {
    /// IPv4 + TCP (ports 40000 → 80) + "GET".
    static func ipv4TCP(payload: [UInt8] = Array("GET".utf8), protocolNumber: UInt8 = 6) -> [UInt8] {
        let total = 20 + 20 + payload.count
        var ip: [UInt8] = [0x45, 0, UInt8(total >> 8), UInt8(total & 0xff), 0, 1, 0x40, 0, 64, protocolNumber, 0, 0,
                           10, 0, 0, 1, 10, 0, 0, 2]
        ip += [0x9c, 0x40, 0, 80, 0, 0, 0, 1, 0, 0, 0, 0, 0x50, 0x18, 0xff, 0xff, 0, 0, 0, 0]
        return ip + payload
    }

    static func outerIPv4(_ inner: [UInt8], proto: UInt8) -> [UInt8] {
        let total = 20 + inner.count
        return [0x45, 0, UInt8(total >> 8), UInt8(total & 0xff), 0, 2, 0x40, 0, 64, proto, 0, 0,
                192, 0, 2, 1, 192, 0, 2, 2] + inner
    }

    static func udp(_ payload: [UInt8], source: UInt16, destination: UInt16) -> [UInt8] {
        let length = 8 + payload.count
        return [UInt8(source >> 8), UInt8(source & 0xff), UInt8(destination >> 8), UInt8(destination & 0xff),
                UInt8(length >> 8), UInt8(length & 0xff), 0, 0] + payload
    }

    static let ethernetHeader: [UInt8] = [2, 0, 0, 0, 0, 0xb, 2, 0, 0, 0, 0, 0xa]

    enum Seen: Equatable {
        case tcp(sourcePort: UInt16, payload: Int, missing: Int)
        case udp(destinationPort: UInt16)
        case skipped
        case skippedNamed(Weird)
        case malformed(Weird)
    }

    static func decode(_ bytes: [UInt8], link: Int32 = 1, wireLength: Int? = nil) -> Seen {
        var decoder = PacketDecoder(linkType: LinkType(dlt: link))
        return bytes.withUnsafeBytes { b in
            switch decoder.decode(CapturedPacket(bytes: b, timestamp: Timestamp(nanoseconds: 1), wireLength: wireLength ?? b.count)) {
            case .tcp(let s): return .tcp(sourcePort: s.source.port, payload: s.payload.count, missing: s.missingPayload)
            case .udp(let d): return .udp(destinationPort: d.destination.port)
            case .skipped, .neighbor: return .skipped
            case .skippedNamed(let w): return .skippedNamed(w)
            case .malformed(let w): return .malformed(w)
            }
        }
    }

    static let segment = Seen.tcp(sourcePort: 40000, payload: 3, missing: 0)

    @Test func greWithChecksumKeyAndSequence() {
        let gre: [UInt8] = [0xB0, 0, 0x08, 0x00, 0xAB, 0xCD, 0, 0, 0, 0, 0, 7, 0, 0, 0, 1]
        #expect(Self.decode(Self.ethernetHeader + [0x08, 0x00] + Self.outerIPv4(gre + Self.ipv4TCP(), proto: 47)) == Self.segment)
        // Cut inside the GRE header: named, not read past the end.
        #expect(Self.decode(Self.ethernetHeader + [0x08, 0x00] + Self.outerIPv4(Array(gre[0..<6]), proto: 47)) == .malformed(.truncatedTunnelHeader))
    }

    @Test func udpOnATunnelPortThatIsNotTheTunnelStaysUDP() {
        // A VXLAN header without its I flag; a GTP echo request (message 1, not user data).
        let vxlan = Self.udp([0, 0, 0, 0, 0, 0, 42, 0] + Self.ipv4TCP(), source: 5000, destination: 4789)
        #expect(Self.decode(Self.ethernetHeader + [0x08, 0x00] + Self.outerIPv4(vxlan, proto: 17)) == .udp(destinationPort: 4789))
        let echo = Self.udp([0x32, 0x01, 0, 4, 0, 0, 0, 0, 0, 1, 0, 0], source: 2152, destination: 2152)
        #expect(Self.decode(Self.ethernetHeader + [0x08, 0x00] + Self.outerIPv4(echo, proto: 17)) == .udp(destinationPort: 2152))
    }

    @Test func pppProtocolCompressionAndControlProtocols() {
        #expect(Self.decode([0x21] + Self.ipv4TCP(), link: 9) == Self.segment)             // compressed field
        #expect(Self.decode([0xFF, 0x03, 0x00, 0x21] + Self.ipv4TCP(), link: 50) == Self.segment)
        #expect(Self.decode([0xFF, 0x03, 0xC0, 0x21, 1, 1, 0, 4], link: 50) == .skipped)   // LCP
        #expect(Self.decode([0xFF, 0x03, 0x00, 0x3D, 1, 1], link: 50) == .skippedNamed(.unknownTunnelPayload))
        // Cisco HDLC frames on a PPP serial link.
        #expect(Self.decode([0x0F, 0x00, 0x08, 0x00] + Self.ipv4TCP(), link: 50) == Self.segment)
    }

    /// PPPoE session frames (EtherType 0x8864) with the PPP protocol field in two bytes, and
    /// compressed to one as some access concentrators send it (it was read as 0x2145: not IP).
    @Test func pppoeWithAndWithoutProtocolFieldCompression() {
        let tcp = Self.ipv4TCP()
        func pppoe(_ field: [UInt8]) -> [UInt8] {
            let length = field.count + tcp.count
            return Self.ethernetHeader + [0x88, 0x64, 0x11, 0x00, 0x12, 0x34, UInt8(length >> 8), UInt8(length & 0xFF)] + field + tcp
        }
        #expect(Self.decode(pppoe([0x00, 0x21])) == Self.segment)
        #expect(Self.decode(pppoe([0x21])) == Self.segment)
        #expect(Self.decode(Self.ethernetHeader + [0x88, 0x64, 0x11, 0x00, 0x12, 0x34, 0, 0]) == .malformed(.truncatedTunnelHeader))
    }

    @Test func nestingIsBounded() {
        func nested(_ depth: Int) -> [UInt8] {
            var p = Self.ipv4TCP()
            for _ in 0..<depth { p = Self.outerIPv4(p, proto: 4) }
            return Self.ethernetHeader + [0x08, 0x00] + p
        }
        #expect(Self.decode(nested(PacketDecoder.maxEncapsulationDepth)) == Self.segment)
        #expect(Self.decode(nested(PacketDecoder.maxEncapsulationDepth + 1)) == .malformed(.encapsulationTooDeep))
        // An MPLS stack whose bottom-of-stack bit never comes.
        let labels = [UInt8](repeating: 0, count: 4 * 20)
        #expect(Self.decode(Self.ethernetHeader + [0x88, 0x47] + labels + Self.ipv4TCP()) == .malformed(.encapsulationTooDeep))
    }

    @Test func snaplenCutOfTheOuterPacketReachesTheInnerSegment() {
        let packet = Self.ethernetHeader + [0x08, 0x00] + Self.outerIPv4(Self.ipv4TCP(payload: Array(repeating: 0x41, count: 100)), proto: 4)
        let cut = Array(packet[0..<(packet.count - 60)])
        #expect(Self.decode(cut, wireLength: packet.count) == .tcp(sourcePort: 40000, payload: 40, missing: 60))
    }

    @Test func wirelessFramesThatCarryNoReadableData() {
        let radiotap: [UInt8] = [0, 0, 8, 0, 0, 0, 0, 0]
        let addresses = [UInt8](repeating: 2, count: 18) + [0, 0]
        // Protected QoS data, a null-data frame, a beacon.
        #expect(Self.decode(radiotap + [0x88, 0x41, 0, 0] + addresses + [0, 0] + [UInt8](repeating: 9, count: 40), link: 127)
                == .skippedNamed(.wifiEncryptedFrame))
        #expect(Self.decode(radiotap + [0x48, 0x01, 0, 0] + addresses, link: 127) == .skipped)
        #expect(Self.decode(radiotap + [0x80, 0x00, 0, 0] + addresses + [UInt8](repeating: 0, count: 12), link: 127) == .skipped)
        // A radiotap length beyond the packet.
        #expect(Self.decode([0, 0, 0xff, 0x0f, 0, 0, 0, 0] + addresses, link: 127) == .malformed(.truncatedLinkHeader))
        // Clear QoS data with LLC/SNAP.
        #expect(Self.decode(radiotap + [0x88, 0x01, 0, 0] + addresses + [0, 0] + [0xAA, 0xAA, 3, 0, 0, 0, 0x08, 0x00] + Self.ipv4TCP(), link: 127)
                == Self.segment)
    }
}
