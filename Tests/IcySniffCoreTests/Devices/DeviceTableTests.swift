import Testing
@testable import IcySniffCore

/// The device table's readers of what a device says about itself, on messages laid out as
/// their RFCs give them (the DHCP, DHCPv6, mDNS and NDP of real clients are in the CLI's
/// DevicesTests, on captures/hotspot-sample.pcap).
@Suite struct DeviceTableTests {
    static let mac = MACAddress(raw: 0x02_00_00_00_00_33)

    /// A NetBIOS name registration (RFC 1002 4.2.2) for `name` with `suffix`.
    static func netbiosRegistration(_ name: String, suffix: UInt8 = 0x00, opcode: UInt16 = 5) -> [UInt8] {
        var p: [UInt8] = [0x12, 0x34]
        let flags = opcode << 11 | 0x0110
        p += [UInt8(flags >> 8), UInt8(flags & 0xFF), 0, 1, 0, 0, 0, 0, 0, 1]
        var raw = Array(name.utf8.prefix(15)); while raw.count < 15 { raw.append(0x20) }; raw.append(suffix)
        p.append(32)
        for b in raw { p += [0x41 + (b >> 4), 0x41 + (b & 0xF)] }
        p += [0, 0x00, 0x20, 0x00, 0x01]
        p += [0xC0, 0x0C, 0x00, 0x20, 0x00, 0x01, 0, 0x04, 0x93, 0xE0, 0, 6, 0, 0, 10, 0, 0, 33]
        return p
    }

    func names(after payloads: [[UInt8]]) -> [String] {
        let table = DeviceTable()
        for payload in payloads {
            payload.withUnsafeBytes { b in
                let d = UDPDatagram(source: Endpoint(address: IPAddress(text: "10.0.0.33")!, port: 137),
                                    destination: Endpoint(address: IPAddress(text: "10.0.0.255")!, port: 137),
                                    payload: b, timestamp: Timestamp(nanoseconds: 1_000_000_000))
                table.observe(mac: Self.mac, address: d.source.address, at: d.timestamp)
                table.observeService(d, mac: Self.mac)
            }
        }
        return table.summaries().flatMap { $0.names.filter { $0.source == "netbios" }.map(\.name) }
    }

    @Test func netbiosRegistrationsNameTheirSender() {
        #expect(names(after: [Self.netbiosRegistration("WIN-LAPTOP")]) == ["WIN-LAPTOP"])
        // A refresh (opcode 8) and a server name (suffix 0x20) of the same name: one name.
        #expect(names(after: [Self.netbiosRegistration("WIN-LAPTOP", opcode: 8), Self.netbiosRegistration("WIN-LAPTOP", suffix: 0x20)]) == ["WIN-LAPTOP"])
        // A domain or group name (suffix 0x1E), a query (opcode 0) and a damaged encoding name nothing.
        #expect(names(after: [Self.netbiosRegistration("WORKGROUP", suffix: 0x1E)]).isEmpty)
        #expect(names(after: [Self.netbiosRegistration("WIN-LAPTOP", opcode: 0)]).isEmpty)
        var damaged = Self.netbiosRegistration("WIN-LAPTOP"); damaged[14] = 0x5A
        #expect(names(after: [damaged]).isEmpty)
    }

    /// The directory other threads read (the web view's `/api/devices`, `--client NAME`) has a
    /// device's names as they come, its own name first, and says what changed after a change.
    @Test func theDirectoryGivesWhatChangedSinceTheLastAsk() {
        let table = DeviceTable(), directory = DeviceDirectory()
        table.directory = directory
        func say(_ name: String, opcode: UInt16 = 5) {
            Self.netbiosRegistration(name, opcode: opcode).withUnsafeBytes { b in
                let d = UDPDatagram(source: Endpoint(address: IPAddress(text: "10.0.0.33")!, port: 137),
                                    destination: Endpoint(address: IPAddress(text: "10.0.0.255")!, port: 137),
                                    payload: b, timestamp: Timestamp(nanoseconds: 1_000_000_000))
                table.observe(mac: Self.mac, address: d.source.address, at: d.timestamp)
                table.observeService(d, mac: Self.mac)
            }
        }
        #expect(directory.changed(after: 0).devices.isEmpty)
        say("WIN-LAPTOP")
        let first = directory.changed(after: 0)
        #expect(first.devices.map(\.mac) == [Self.mac] && first.devices.first?.names == ["WIN-LAPTOP"])
        say("WIN-LAPTOP", opcode: 8)   // the same name again: no change
        #expect(directory.changed(after: first.latest).devices.isEmpty)
        say("OFFICE-PC")
        let second = directory.changed(after: first.latest)
        #expect(second.latest > first.latest && second.devices.first?.names == ["WIN-LAPTOP", "OFFICE-PC"])
        #expect(directory.names(of: Self.mac.raw) == ["WIN-LAPTOP", "OFFICE-PC"])
    }
}
