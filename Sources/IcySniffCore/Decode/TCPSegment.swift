/// TCP header flags.
public struct TCPFlags: OptionSet, Sendable {
    public let rawValue: UInt8
    @inlinable public init(rawValue: UInt8) { self.rawValue = rawValue }
    public static let fin = TCPFlags(rawValue: 0x01)
    public static let syn = TCPFlags(rawValue: 0x02)
    public static let rst = TCPFlags(rawValue: 0x04)
    public static let psh = TCPFlags(rawValue: 0x08)
    public static let ack = TCPFlags(rawValue: 0x10)
}

/// One decoded TCP segment. `payload` borrows the packet's bytes (or the IP fragment buffer) for
/// the duration of one call.
public struct TCPSegment {
    public var source: Endpoint
    public var destination: Endpoint
    public var sequence: UInt32
    public var acknowledgement: UInt32
    public var flags: TCPFlags
    public var window: UInt16
    public var payload: UnsafeRawBufferPointer
    /// Payload bytes the IP header announces but the snaplen cut off.
    public var missingPayload: Int
    public var timestamp: Timestamp

    public init(source: Endpoint, destination: Endpoint, sequence: UInt32, acknowledgement: UInt32, flags: TCPFlags,
                window: UInt16 = 65535, payload: UnsafeRawBufferPointer, missingPayload: Int = 0, timestamp: Timestamp) {
        self.source = source
        self.destination = destination
        self.sequence = sequence
        self.acknowledgement = acknowledgement
        self.flags = flags
        self.window = window
        self.payload = payload
        self.missingPayload = missingPayload
        self.timestamp = timestamp
    }
}

/// One decoded UDP datagram (QUIC, and DNS for timing). `payload` borrows the packet's bytes
/// for the duration of one call.
public struct UDPDatagram {
    public var source: Endpoint
    public var destination: Endpoint
    public var payload: UnsafeRawBufferPointer
    public var timestamp: Timestamp

    public init(source: Endpoint, destination: Endpoint, payload: UnsafeRawBufferPointer, timestamp: Timestamp) {
        self.source = source
        self.destination = destination
        self.payload = payload
        self.timestamp = timestamp
    }
}

/// What the decoder made of a packet.
/// An IPv6 Neighbor Solicitation or Advertisement (RFC 4861): who says an address is theirs.
public struct NeighborDiscovery {
    /// A Neighbor Advertisement (else a Solicitation).
    public var advertisement: Bool
    /// The IPv6 source address (`::` in Duplicate Address Detection, RFC 4862).
    public var source: IPAddress
    /// The address solicited or advertised.
    public var target: IPAddress
    public var timestamp: Timestamp
}

public enum DecodeOutcome {
    case tcp(TCPSegment)
    case udp(UDPDatagram)
    /// ICMPv6 neighbor discovery (`--devices`' addresses; nothing else reads it).
    case neighbor(NeighborDiscovery)
    /// Not TCP or UDP over IP (ICMP, …), or an IP fragment waiting for the rest.
    case skipped
    /// Skipped, and counted under a name: the link layer carries something other than IP
    /// (`unknown_link_payload`: ARP, LLDP, …).
    case skippedNamed(Weird)
    /// Bad or cut-short headers: counted, then the packet is skipped.
    case malformed(Weird)
}
