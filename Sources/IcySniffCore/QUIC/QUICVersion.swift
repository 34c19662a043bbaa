/// QUIC versions icy-sniff can read (RFC 9000 v1, RFC 9369 v2, the draft-29 era versions still in
/// captures): the Initial salt, the labels of the packet-protection keys, and how the long header's
/// two type bits name packet types in each.
struct QUICVersion {
    let number: UInt32
    let salt: [UInt8]
    /// "quic " (v1 and drafts) or "quicv2 " (RFC 9369 §3.3.2): the prefix of `key`, `iv`, `hp`, `ku`.
    let labelPrefix: String
    let isV2: Bool

    /// The labels its packet-protection keys are expanded with.
    var labels: TrafficKeyLabels { .quic(prefix: labelPrefix) }

    static let v1: UInt32 = 0x0000_0001
    static let v2: UInt32 = 0x6b33_43cf

    init?(_ number: UInt32) {
        self.number = number
        switch number {
        case Self.v1:
            salt = [0x38, 0x76, 0x2c, 0xf7, 0xf5, 0x59, 0x34, 0xb3, 0x4d, 0x17, 0x9a, 0xe6, 0xa4, 0xc8, 0x0c, 0xad, 0xcc, 0xbb, 0x7f, 0x0a]
            labelPrefix = "quic "; isV2 = false
        case Self.v2:
            salt = [0x0d, 0xed, 0xe3, 0xde, 0xf7, 0x00, 0xa6, 0xdb, 0x81, 0x93, 0x81, 0xbe, 0x6e, 0x26, 0x9d, 0xcb, 0xf9, 0xbd, 0x2e, 0xd9]
            labelPrefix = "quicv2 "; isV2 = true
        case 0xff00_001d...0xff00_0022:
            // draft-29 to draft-34 (the salt of draft-29; drafts 30-34 kept it).
            salt = [0xaf, 0xbf, 0xec, 0x28, 0x99, 0x93, 0xd2, 0x4c, 0x9e, 0x97, 0x86, 0xf1, 0x9c, 0x61, 0x11, 0xe0, 0x43, 0x90, 0xa8, 0x99]
            labelPrefix = "quic "; isV2 = false
        case 0xff00_0017...0xff00_001c:
            // draft-23 to draft-28.
            salt = [0xc3, 0xee, 0xf7, 0x12, 0xc7, 0x2e, 0xbb, 0x5a, 0x11, 0xa7, 0xd2, 0x43, 0x2b, 0xb4, 0x63, 0x65, 0xbe, 0xf9, 0xf5, 0x02]
            labelPrefix = "quic "; isV2 = false
        default:
            return nil
        }
    }

    /// The long header's type bits as a packet type (RFC 9000 §17.2, RFC 9369 §3.2).
    func packetType(_ bits: UInt8) -> QUICPacketType {
        if isV2 {
            switch bits { case 1: return .initial; case 2: return .zeroRTT; case 3: return .handshake; default: return .retry }
        }
        switch bits { case 0: return .initial; case 1: return .zeroRTT; case 2: return .handshake; default: return .retry }
    }

    /// How outputs name a version: "QUIC v1", "QUIC v2", "draft-29", else its hex.
    static func name(_ v: UInt32) -> String {
        switch v {
        case v1: return "QUIC v1"
        case v2: return "QUIC v2"
        case 0xff00_0000...0xff00_00ff: return "draft-\(v & 0xff)"
        default: return hex(v)
        }
    }

    static func hex(_ v: UInt32) -> String {
        let h = String(v, radix: 16)
        return "0x" + String(repeating: "0", count: max(0, 8 - h.count)) + h
    }
}

enum QUICPacketType: Sendable {
    case initial, zeroRTT, handshake, retry, oneRTT, versionNegotiation
}

/// The packet-number spaces (RFC 9000 §12.3): 0-RTT and 1-RTT share the application space.
enum QUICSpace: Int {
    case initial = 0, handshake = 1, application = 2
}

/// One value for each packet-number space, subscripted by `QUICSpace` (as `PerDirection` is by
/// `Direction`; a buffer in it is mutated in place through `_modify`).
struct PerSpace<Value> {
    var initial: Value
    var handshake: Value
    var application: Value

    init(_ all: Value) {
        initial = all
        handshake = all
        application = all
    }

    @inline(__always) subscript(space: QUICSpace) -> Value {
        get {
            switch space {
            case .initial: initial
            case .handshake: handshake
            case .application: application
            }
        }
        _modify {
            switch space {
            case .initial: yield &initial
            case .handshake: yield &handshake
            case .application: yield &application
            }
        }
    }
}
