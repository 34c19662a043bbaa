import Testing
@testable import IcySniffCore

/// Which link-layer address is a frame's sender and which its receiver (`LinkSource`), for the
/// link types `--devices` reads: the 802.11 address that is the source depends on the To/From
/// DS bits, and the radio headers in front differ.
@Suite struct LinkSourceTests {
    static let a1: [UInt8] = [0x02, 0, 0, 0, 0, 0xA1], a2: [UInt8] = [0x02, 0, 0, 0, 0, 0xA2]
    static let a3: [UInt8] = [0x02, 0, 0, 0, 0, 0xA3], a4: [UInt8] = [0x02, 0, 0, 0, 0, 0xA4]

    /// An 802.11 data frame header with `flags` (bit 0 To DS, bit 1 From DS), then LLC/SNAP.
    static func wifi(flags: UInt8) -> [UInt8] {
        var f: [UInt8] = [0x08, flags, 0, 0] + a1 + a2 + a3 + [0, 0]
        if flags & 3 == 3 { f += a4 }
        return f + [0xAA, 0xAA, 0x03, 0, 0, 0, 0x08, 0x00]
    }

    static func mac(_ b: [UInt8]) -> MACAddress { MACAddress(raw: b.reduce(0) { $0 << 8 | UInt64($1) }) }

    func source(_ frame: [UInt8], _ type: LinkType) -> (MACAddress?, MACAddress?) {
        frame.withUnsafeBytes { LinkSource.addresses(of: $0, linkType: type) }
    }

    @Test func wifiSourceAndDestinationFollowTheDSBits() {
        // Station to station (ad hoc): DA a1, SA a2. To the AP: DA a3, SA a2. From the AP: DA a1,
        // SA a3. WDS: DA a3, SA a4.
        #expect(source(Self.wifi(flags: 0), .ieee80211) == (Self.mac(Self.a2), Self.mac(Self.a1)))
        #expect(source(Self.wifi(flags: 1), .ieee80211) == (Self.mac(Self.a2), Self.mac(Self.a3)))
        #expect(source(Self.wifi(flags: 2), .ieee80211) == (Self.mac(Self.a3), Self.mac(Self.a1)))
        #expect(source(Self.wifi(flags: 3), .ieee80211).0 == Self.mac(Self.a4))
        // Behind a radiotap header of 12 bytes.
        let radiotap: [UInt8] = [0, 0, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0] + Self.wifi(flags: 2)
        #expect(source(radiotap, .radiotap) == (Self.mac(Self.a3), Self.mac(Self.a1)))
        // A management frame (type 0) names no device; a cut header gives nothing.
        var beacon = Self.wifi(flags: 0); beacon[0] = 0x80
        #expect(source(beacon, .ieee80211) == (nil, nil))
        #expect(source(Array(Self.wifi(flags: 0).prefix(12)), .ieee80211) == (nil, nil))
    }

    @Test func ethernetAndCookedCaptures() {
        let ethernet = Self.a1 + Self.a2 + [0x08, 0x00]
        #expect(source(ethernet, .ethernet) == (Self.mac(Self.a2), Self.mac(Self.a1)))
        // Linux cooked v1: packet type, ARPHRD, address length 6, the sender's address.
        let sll: [UInt8] = [0, 0, 0, 1, 0, 6] + Self.a3 + [0, 0, 0x08, 0x00]
        #expect(source(sll, .linuxSLL) == (Self.mac(Self.a3), nil))
        // v2: protocol, reserved, interface, ARPHRD, packet type, address length, address.
        let sll2: [UInt8] = [0x08, 0x00, 0, 0, 0, 0, 0, 1, 0, 1, 0, 6] + Self.a4 + [0, 0]
        #expect(source(sll2, .linuxSLL2) == (Self.mac(Self.a4), nil))
        #expect(source([0x45, 0, 0, 20], .raw) == (nil, nil))
    }

    @Test func macAddressText() {
        #expect(MACAddress(text: "02:00:00:00:00:A1") == Self.mac(Self.a1))
        #expect(MACAddress(text: "02-00-00-00-00-a1")?.description == "02:00:00:00:00:a1")
        #expect(MACAddress(text: "02:00:00:00:00") == nil && MACAddress(text: "zz:00:00:00:00:00") == nil)
        #expect(!MACAddress(raw: 0x01005E00_00FB).isIndividual && !MACAddress(raw: 0).isIndividual && Self.mac(Self.a1).isIndividual)
    }
}
