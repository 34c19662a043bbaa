/// The link-layer header type of a capture (libpcap's DLT_ values as `pcap_datalink` returns them).
public enum LinkType: Equatable, Sendable {
    case ethernet          // DLT_EN10MB (1), with 802.1Q / QinQ tags and LLC/SNAP
    case null              // DLT_NULL (0): BSD loopback, host-endian address family
    case loop              // DLT_LOOP (108): OpenBSD loopback, network-endian family
    case raw               // DLT_RAW (12, or 14 on OpenBSD) and LINKTYPE_RAW (101)
    case ipv4              // LINKTYPE_IPV4 (228)
    case ipv6              // LINKTYPE_IPV6 (229)
    case linuxSLL          // DLT_LINUX_SLL (113): `-i any`, cooked v1
    case linuxSLL2         // DLT_LINUX_SLL2 (276): cooked v2
    case nflog             // DLT_NFLOG (239): Linux netfilter log
    case unsupported(Int32)

    public init(dlt: Int32) {
        switch dlt {
        case 1: self = .ethernet
        case 0: self = .null
        case 108: self = .loop
        case 12, 14, 101: self = .raw
        case 228: self = .ipv4
        case 229: self = .ipv6
        case 113: self = .linuxSLL
        case 276: self = .linuxSLL2
        case 239: self = .nflog
        default: self = .unsupported(dlt)
        }
    }

    public var isSupported: Bool {
        if case .unsupported = self { return false }
        return true
    }
}
