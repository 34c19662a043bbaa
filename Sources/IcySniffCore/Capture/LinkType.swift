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
    case ppp               // DLT_PPP (9), DLT_PPP_SERIAL (50): PPP, PPP in HDLC-like framing
    case pppoe             // DLT_PPP_ETHER (51): PPPoE session header, no Ethernet
    case ciscoHDLC         // DLT_C_HDLC (104): Cisco HDLC, an EtherType after 2 bytes
    case ieee80211         // DLT_IEEE802_11 (105): 802.11 frames, no radio header
    case prism             // DLT_PRISM_HEADER (119): 802.11 with a Prism monitor header
    case radiotap          // DLT_IEEE802_11_RADIO (127): 802.11 with radiotap
    case avs               // DLT_IEEE802_11_RADIO_AVS (163): 802.11 with an AVS header
    case ppi               // DLT_PPI (192): Per-Packet Information, then 802.11 (or Ethernet)
    case arcnet            // DLT_ARCNET (7): BSD's ARCNET header (RFC 1051/1201)
    case arcnetLinux       // DLT_ARCNET_LINUX (129): Linux's, with a 2-byte offset field
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
        case 9, 50: self = .ppp
        case 51: self = .pppoe
        case 104: self = .ciscoHDLC
        case 105: self = .ieee80211
        case 119: self = .prism
        case 127: self = .radiotap
        case 163: self = .avs
        case 192: self = .ppi
        case 7: self = .arcnet
        case 129: self = .arcnetLinux
        default: self = .unsupported(dlt)
        }
    }

    public var isSupported: Bool {
        if case .unsupported = self { return false }
        return true
    }
}
