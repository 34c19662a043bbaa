/// 802.11 captures: a host capturing in monitor mode, or an open hotspot. The radio headers
/// (radiotap, PPI, Prism, AVS) are skipped by their length; data frames with LLC/SNAP are decoded,
/// including QoS and four-address (WDS/mesh) frames. Management and control frames are skipped
/// unnamed; protected (encrypted) data frames are counted as `encrypted_wifi_frame` and skipped,
/// as are A-MSDU aggregates (`wifi_amsdu_not_decoded`).
extension PacketDecoder {
    mutating func decodeWireless(_ b: UnsafeRawBufferPointer, _ wire: WireContext) -> DecodeOutcome {
        guard let offset = Self.radioHeaderLength(b, linkType) else { return .malformed(.truncatedLinkHeader) }
        if linkType == .ppi {
            // The DLT of what follows the PPI header: 802.11, or Ethernet.
            let dlt = Int32(bitPattern: UInt32(b.le16(4)) | UInt32(b.le16(6)) << 16)
            switch dlt {
            case 105: break
            case 1: return decodeEthernet(b, at: offset, wire, depth: 1)
            default: return .skippedNamed(.unknownLinkPayload)
            }
        }
        guard b.count >= offset + 24 else { return .malformed(.truncatedLinkHeader) }
        return decode80211(b, at: offset, wire)
    }

    /// Where the 802.11 frame begins behind the radio header of `linkType` (0 for bare 802.11);
    /// nil when the header is cut short. The one reading of these headers (`LinkSource` too).
    static func radioHeaderLength(_ b: UnsafeRawBufferPointer, _ linkType: LinkType) -> Int? {
        switch linkType {
        case .radiotap, .ppi:
            // Version 0, pad (radiotap) or flags (PPI), little-endian length of the whole header
            // (PPI: then the DLT of what follows).
            guard b.count >= 8, b.u8(0) == 0 else { return nil }
            return Int(b.le16(2))
        case .prism:
            // Message code, then the message length (host order: little-endian in practice).
            guard b.count >= 8 else { return nil }
            let length = Int(b.le16(4)) | Int(b.le16(6)) << 16
            return length > b.count || length < 8 ? 144 : length   // the fixed size Linux's drivers write
        case .avs:
            guard b.count >= 8 else { return nil }
            return Int(b.be32(4))
        default:
            return 0
        }
    }

    /// An 802.11 MAC frame at `start`.
    private mutating func decode80211(_ b: UnsafeRawBufferPointer, at start: Int, _ wire: WireContext) -> DecodeOutcome {
        let control = b.u8(start)
        let flags = b.u8(start + 1)
        guard control & 0x03 == 0 else { return .malformed(.truncatedLinkHeader) }  // protocol version 0
        guard (control >> 2) & 0x03 == 2 else { return .skipped }                    // not a data frame
        let subtype = control >> 4
        if subtype & 0x04 != 0 { return .skipped }                                   // null data: no body
        if flags & 0x40 != 0 { return .skippedNamed(.wifiEncryptedFrame) }            // protected
        var offset = start + 24
        if flags & 0x03 == 0x03 { offset += 6 }                                      // to and from DS: address 4
        if subtype & 0x08 != 0 {
            // QoS data: a 2-byte QoS control field, and a 4-byte HT control field when the
            // order bit is set. Bit 7 of the QoS control marks an A-MSDU.
            guard b.count >= offset + 2 else { return .malformed(.truncatedLinkHeader) }
            if b.u8(offset) & 0x80 != 0 { return .skippedNamed(.wifiAMSDU) }
            offset += 2
            if flags & 0x80 != 0 { offset += 4 }
        }
        guard b.count >= offset + 8 else { return .malformed(.truncatedLinkHeader) }
        guard b.u8(offset) == 0xAA, b.u8(offset + 1) == 0xAA, b.u8(offset + 2) == 0x03 else { return .skipped }
        return decodeEtherType(b.be16(offset + 6), b, at: offset + 8, wire, depth: 0)
    }
}
