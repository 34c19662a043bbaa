import Foundation
import Testing

/// `--devices` (issue 53): who is who on a hotspot, on a real one (captures/hotspot-sample.pcap,
/// scripts/record-hotspot-sample: dnsmasq, udhcpc, dhclient -6, SLAAC, zeroconf, nginx, curl in
/// network namespaces), against what each phone did (hotspot-sample.json).
@Suite struct DevicesTests {
    static func rows(_ text: String) -> [[String: Any]] {
        text.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
    }

    static var truth: [[String: Any]] {
        get throws {
            let data = try Data(contentsOf: URL(fileURLWithPath: CLI.capture("hotspot-sample.json")))
            return try #require((try JSONSerialization.jsonObject(with: data) as? [String: Any])?["phones"] as? [[String: Any]])
        }
    }

    /// Each phone is one device under its MAC, with the names it gave (DHCP host name, DHCPv6
    /// FQDN, mDNS), its OS hint, its IPv4 and IPv6 traffic together, and the requests it made;
    /// the address the second phone was given after the first left is split between them.
    @Test func eachPhoneIsOneDeviceWithItsNamesAddressesAndRequests() throws {
        let run = try CLI.run(["-r", CLI.capture("hotspot-sample.pcap"), "--devices", "--format", "ndjson"])
        #expect(run.status == 0)
        let devices = Self.rows(run.text)
        let phones = try Self.truth
        #expect(devices.count == phones.count, "\(devices)")
        #expect(run.stderr.contains("\(phones.count) devices, by link-layer address"), "\(run.stderr)")
        var ranges: [(first: String, last: String)] = []
        for phone in phones {
            let mac = try #require(phone["mac"] as? String)
            let device = try #require(devices.first { $0["mac"] as? String == mac }, "\(mac) in \(devices)")
            let names = (device["names"] as? [[String: String]] ?? []).map { $0["name"] ?? "" }
            #expect(names == phone["names"] as? [String], "\(mac): \(device["names"] ?? "")")
            #expect(device["name"] as? String == names.first)
            let sources = (device["names"] as? [[String: String]] ?? []).compactMap { $0["source"] }
            #expect(sources.first == "dhcp" && Set(sources).isSubset(of: ["dhcp", "dhcp-fqdn", "dhcpv6", "mdns"]), "\(sources)")
            #expect(device["os_hint"] as? String == phone["os_hint"] as? String)
            #expect(device["model"] as? String == phone["model"] as? String)
            // What it sent: curl's User-Agent (its requests are curl's), no JA4 (no TLS).
            #expect((device["user_agents"] as? [String] ?? []).count == 1 && (device["user_agents"] as? [String])?.first?.hasPrefix("curl/") == true, "\(device["user_agents"] ?? "")")
            #expect((device["ja4"] as? [String])?.isEmpty == true)
            #expect(device["requests"] as? Int == phone["requests"] as? Int, "\(mac): \(device["requests"] ?? "")")
            let addresses = device["addresses"] as? [[String: String]] ?? []
            let held = Set(addresses.compactMap { $0["address"] })
            #expect(held.contains(phone["ipv4"] as? String ?? "?"), "\(mac): \(held)")
            // Every global IPv6 address it had is listed: the temporary one it sent from, the
            // stable one only Duplicate Address Detection shows, the DHCPv6 one.
            #expect(Set(phone["ipv6"] as? [String] ?? ["?"]).isSubset(of: held), "\(mac): \(held) against \(phone["ipv6"] ?? "")")
            let v4 = try #require(addresses.first { $0["address"] == phone["ipv4"] as? String })
            ranges.append((v4["first"] ?? "", v4["last"] ?? ""))
        }
        // The reused address: the second phone's time with it begins after the first's ends.
        #expect(ranges.count == 2 && ranges[0].last < ranges[1].first, "\(ranges)")
        // No address but the reused one under two devices.
        let all = devices.flatMap { ($0["addresses"] as? [[String: String]] ?? []).compactMap { $0["address"] } }
        #expect(all.count - Set(all).count == 1, "\(all)")
        // Every transaction is some device's request.
        let transactions = Self.rows(try CLI.run(["-r", CLI.capture("hotspot-sample.pcap"), "--format", "ndjson", "--quiet"]).text)
        #expect(devices.reduce(0) { $0 + ($1["requests"] as? Int ?? 0) } == transactions.count)
    }

    /// Every output carries the device (its MAC) of each transaction; `--client MAC` keeps one
    /// phone's IPv4 and IPv6 traffic; `report` counts per device and names it.
    @Test func transactionsCarryTheirDeviceAndReportNamesIt() throws {
        let capture = CLI.capture("hotspot-sample.pcap")
        let phones = try Self.truth
        let rows = Self.rows(try CLI.run(["-r", capture, "--format", "ndjson", "--quiet"]).text)
        for phone in phones {
            let mac = try #require(phone["mac"] as? String)
            let mine = rows.filter { $0["device"] as? String == mac }
            #expect(mine.count == phone["requests"] as? Int, "\(mac): \(mine.count)")
            // Over both address families.
            #expect(Set(mine.compactMap { ($0["client_ip"] as? String)?.contains(":") }) == [true, false], "\(mac)")
            let chosen = Self.rows(try CLI.run(["-r", capture, "--format", "ndjson", "--quiet", "--client", mac]).text)
            #expect(chosen.count == mine.count && chosen.allSatisfy { $0["device"] as? String == mac })
            let har = try #require(try JSONSerialization.jsonObject(with: CLI.run(["-r", capture, "--har", "--quiet", "--client", mac]).stdout) as? [String: Any])
            let entries = (har["log"] as? [String: Any])?["entries"] as? [[String: Any]] ?? []
            #expect(entries.count == mine.count && entries.allSatisfy { $0["_device"] as? String == mac })
        }
        // The address both phones held: its rows split by device, not merged.
        let reused = rows.filter { $0["client_ip"] as? String == "10.77.0.50" }
        #expect(Set(reused.compactMap { $0["device"] as? String }).count == 2)
        let report = try #require(try JSONSerialization.jsonObject(with: CLI.run(["report", "-r", capture, "--format", "json"]).stdout) as? [[String: Any]])
        let devices = report.first?["devices"] as? [[String: Any]] ?? []
        #expect(devices.count == phones.count, "\(devices)")
        for phone in phones {
            let d = devices.first { $0["mac"] as? String == phone["mac"] as? String }
            #expect(d?["name"] as? String == (phone["names"] as? [String])?.first, "\(devices)")
            #expect(d?["requests"] as? Int == phone["requests"] as? Int)
        }
    }

    /// The terminal table says who sent each request: the phone's own name in its client cell
    /// (the address 10.77.0.50 was both phones'), each row the name of the device it came from.
    @Test func theTableNamesEachRequestsDevice() throws {
        let capture = CLI.capture("hotspot-sample.pcap")
        let rows = Self.rows(try CLI.run(["-r", capture, "--format", "ndjson", "--quiet"]).text)
        let table = try CLI.run(["-r", capture, "--format", "table", "--quiet"], environment: ["COLUMNS": "200"])
        let lines = table.text.split(separator: "\n").dropFirst().map(String.init)
        #expect(lines.count == rows.count && !rows.isEmpty, "\(table.text)")
        let names = Dictionary(uniqueKeysWithValues: try Self.truth.map { ($0["mac"] as? String ?? "", ($0["names"] as? [String])?.first ?? "") })
        for (line, row) in zip(lines, rows) {
            let name = try #require(names[row["device"] as? String ?? ""])
            #expect(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first.map(String.init) == name, "\(line)")
        }
    }

    /// A HAR names the devices its entries' `_device` addresses are: `log._devices` holds the
    /// objects `--devices --format ndjson` writes, one per device, the truth's names first.
    @Test func aHARNamesItsDevices() throws {
        let capture = CLI.capture("hotspot-sample.pcap")
        let listed = Self.rows(try CLI.run(["-r", capture, "--devices", "--format", "ndjson", "--quiet"]).text)
        let har = try #require(try JSONSerialization.jsonObject(with: CLI.run(["-r", capture, "--har", "--quiet"]).stdout) as? [String: Any])
        let log = try #require(har["log"] as? [String: Any])
        let inHAR = log["_devices"] as? [[String: Any]] ?? []
        #expect(inHAR.count == listed.count && !listed.isEmpty, "\(inHAR.count) for \(listed.count)")
        for (a, b) in zip(inHAR, listed) { #expect(NSDictionary(dictionary: a).isEqual(to: b), "\(a) against \(b)") }
        for phone in try Self.truth {
            let d = inHAR.first { $0["mac"] as? String == phone["mac"] as? String }
            #expect(d?["name"] as? String == (phone["names"] as? [String])?.first, "\(phone)")
        }
        // Without link-layer addresses or DHCP a HAR has no devices to name beyond addresses;
        // the field is there only when the table has any.
        let loopback = try #require(try JSONSerialization.jsonObject(with: CLI.run(["-r", CLI.capture("tls-sample.pcap"), "--har", "--quiet"]).stdout) as? [String: Any])
        let devices = (loopback["log"] as? [String: Any])?["_devices"] as? [[String: Any]] ?? []
        #expect(devices.allSatisfy { $0["mac"] is NSNull }, "\(devices)")
    }

    /// `--client` takes the name a device gave itself, as a glob (case ignored), for
    /// transactions and `--connections` alike; a name no device gave is said.
    @Test func clientByName() throws {
        let capture = CLI.capture("hotspot-sample.pcap")
        let phones = try Self.truth
        for (pattern, mac) in [("pixel*", "02:00:00:00:00:11"), ("Galaxy-S24", "02:00:00:00:00:22")] {
            let rows = Self.rows(try CLI.run(["-r", capture, "--format", "ndjson", "--quiet", "--client", pattern]).text)
            #expect(rows.count == phones.first { $0["mac"] as? String == mac }?["requests"] as? Int && rows.allSatisfy { $0["device"] as? String == mac },
                    "\(pattern): \(rows.count)")
            let connections = Self.rows(try CLI.run(["-r", capture, "--connections", "--format", "ndjson", "--quiet", "--client", pattern]).text)
            #expect(connections.count == rows.count && connections.allSatisfy { $0["device"] as? String == mac }, "\(pattern): \(connections.count)")
        }
        // A MAC alone chooses connections too (it let every connection through).
        let byMAC = Self.rows(try CLI.run(["-r", capture, "--connections", "--format", "ndjson", "--quiet", "--client", "02:00:00:00:00:22"]).text)
        #expect(byMAC.count == 5, "\(byMAC.count)")
        let nobody = try CLI.run(["-r", capture, "--client", "nobody"])
        #expect(nobody.status == 0 && nobody.stderr.contains("--client 'nobody': no device gave itself that name"), "\(nobody.stderr)")
        let typo = try CLI.run(["-r", capture, "--client", "10.77.0.300"])
        #expect(typo.status == 64 && typo.stderr.contains("invalid client '10.77.0.300'"), "\(typo.stderr)")
    }

    /// `diff` compares two phones of one capture by their link-layer addresses, from the
    /// capture and from its NDJSON alike: the same 5 requests each, nothing only on one side.
    @Test func diffComparesTwoPhonesByTheirMACs() throws {
        let capture = CLI.capture("hotspot-sample.pcap")
        let ndjson = CLI.temporaryDirectory().appendingPathComponent("hotspot.ndjson").path
        try CLI.run(["-r", capture, "--format", "ndjson", "--quiet"]).stdout.write(to: URL(fileURLWithPath: ndjson))
        for (before, after) in [(capture, capture), (ndjson, ndjson)] {
            let run = try CLI.run(["diff", before, after, "--client-before", "02:00:00:00:00:11", "--client-after", "02:00:00:00:00:22", "--format", "json"])
            let out = try #require(try JSONSerialization.jsonObject(with: run.stdout) as? [String: Any], "\(run.stderr)")
            #expect(run.status == 0, "\(run.stderr)")
            // Each side holds its phone's 5 requests, over IPv4 and IPv6 (an address alone gave
            // 6 on both sides: the reused IPv4 address's requests of both phones).
            #expect((out["totalsBefore"] as? [String: Any])?["requests"] as? Int == 5, "\(out)")
            #expect((out["totalsAfter"] as? [String: Any])?["requests"] as? Int == 5, "\(out)")
            #expect((out["before"] as? String ?? "").hasSuffix("(client 02:00:00:00:00:11)"))
        }
    }

    /// A capture that began after the phones joined (only their TCP: no DHCP, no mDNS) names
    /// them from the hotspot's lease file, said to come from it; the table and TSV list them too.
    @Test func aLeaseFileNamesPhonesWhoseDHCPWasNotCaptured() throws {
        let capture = CLI.capture("hotspot-sample.pcap"), leases = CLI.capture("hotspot-sample.leases")
        let bare = Self.rows(try CLI.run(["-r", capture, "--devices", "--format", "ndjson", "--quiet", "tcp"]).text)
        #expect(bare.count == 2 && bare.allSatisfy { ($0["names"] as? [Any])?.isEmpty == true }, "\(bare)")
        let named = Self.rows(try CLI.run(["-r", capture, "--devices", "--format", "ndjson", "--quiet", "--leases", leases, "tcp"]).text)
        let galaxy = try #require(named.first { $0["mac"] as? String == "02:00:00:00:00:22" })
        #expect((galaxy["names"] as? [[String: String]])?.first == ["name": "Galaxy-S24", "source": "lease-file"], "\(galaxy)")
        // The lease file of the end names only the phone that holds a lease then.
        #expect(named.first { $0["mac"] as? String == "02:00:00:00:00:11" }.map { ($0["names"] as? [Any])?.isEmpty == true } == true)
        let tsv = try CLI.run(["-r", capture, "--devices", "--format", "tsv", "--quiet", "--leases", leases]).text
        let lines = tsv.split(separator: "\n")
        #expect(lines.first?.hasPrefix("id\tmac\tname\tnames") == true && lines.count == 3, "\(tsv)")
        #expect(tsv.contains("Galaxy-S24 (dhcp), Galaxy-S24 (lease-file)"), "packets first, then the lease file: \(tsv)")
        // Errors a user makes: one line, the documented exit codes.
        let missing = try CLI.run(["-r", capture, "--devices", "--leases", "/nonexistent/leases"])
        #expect(missing.status == 2, "\(missing.status)")
        #expect(missing.stderr.contains("--leases: cannot read '/nonexistent/leases'"), "\(missing.stderr)")
        let alone = try CLI.run(["-r", capture, "--leases", leases])
        #expect(alone.status == 64 && alone.stderr.contains("--leases names devices: give it with --devices"), "\(alone.stderr)")
        let har = try CLI.run(["-r", capture, "--devices", "--har"])
        #expect(har.status == 64 && har.stderr.contains("--devices lists devices"), "\(har.stderr)")
    }

    /// Zeek's DHCP traces, against Zeek's own dhcp.log (Tests/Fixtures/corpus/zeek-dhcp): the
    /// client's MAC, the host name it sent, the address it was given or used.
    @Test func zeeksDHCPTracesAgreeWithZeeksLog() throws {
        let folder = CLI.packageRoot.appendingPathComponent("Tests/Fixtures/corpus/zeek-dhcp")
        let expected = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: folder.appendingPathComponent("expected.json"))) as? [String: Any])
        var checked = 0
        for (file, value) in expected where file.hasSuffix(".pcap") {
            let want = try #require(value as? [String: Any])
            let devices = Self.rows(try CLI.run(["-r", folder.appendingPathComponent(file).path, "--devices", "--format", "ndjson", "--quiet"]).text)
            let device = try #require(devices.first { $0["mac"] as? String == want["mac"] as? String }, "\(file): \(devices)")
            #expect(devices.count == 1, "\(file): the DHCP server is no device: \(devices)")
            let names = (device["names"] as? [[String: String]] ?? []).filter { $0["source"] == "dhcp" }.compactMap { $0["name"] }
            #expect(names == [want["host_name"] as? String].compactMap { $0 }, "\(file): \(names)")
            let addresses = (device["addresses"] as? [[String: Any]] ?? []).compactMap { $0["address"] as? String }
            #expect(addresses.contains(want["address"] as? String ?? "?"), "\(file): \(addresses)")
            checked += 1
        }
        #expect(checked == 2)
    }

    /// A device's TLS ClientHellos give its JA4 (tls-sample: curl over loopback, one client).
    @Test func aDevicesJA4IsAHint() throws {
        let devices = Self.rows(try CLI.run(["-r", CLI.capture("tls-sample.pcap"), "--devices", "--format", "ndjson", "--quiet"]).text)
        let connections = Self.rows(try CLI.run(["-r", CLI.capture("tls-sample.pcap"), "--connections", "--format", "ndjson", "--quiet"]).text)
        let ja4s = connections.compactMap { ($0["tls"] as? [String: Any])?["ja4"] as? String }
        var unique: [String] = []
        for j in ja4s where !unique.contains(j) { unique.append(j) }
        #expect(devices.count == 1 && devices.first?["ja4"] as? [String] == unique && !unique.isEmpty, "\(devices)")
    }

    /// Without link-layer addresses (loopback, raw IP) a device is a client address, and the
    /// summary says so.
    @Test func withoutLinkLayerAddressesADeviceIsAClientAddress() throws {
        let run = try CLI.run(["-r", CLI.capture("nginx-sll2.pcap"), "--devices", "--format", "ndjson"])
        let devices = Self.rows(run.text)
        let transactions = Self.rows(try CLI.run(["-r", CLI.capture("nginx-sll2.pcap"), "--format", "ndjson", "--quiet"]).text)
        #expect(devices.count == 1 && devices[0]["mac"] is NSNull, "\(devices)")
        #expect(devices.first?["requests"] as? Int == transactions.count && (devices.first?["connections"] as? Int ?? 0) > 0)
        #expect(run.stderr.contains("1 device, by client address: the capture has no link-layer addresses"), "\(run.stderr)")
        // An empty capture: no devices, and why (it said "0 devices, by client address").
        let empty = CLI.temporaryDirectory().appendingPathComponent("empty.pcap")
        try Data([0xd4, 0xc3, 0xb2, 0xa1, 2, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0, 0, 1, 0, 0, 0]).write(to: empty)
        let none = try CLI.run(["-r", empty.path, "--devices"])
        #expect(none.status == 0 && none.stderr.contains("no devices: no connection's client"), "\(none.stderr)")
    }

    /// A flood of DHCP DISCOVERs from random MACs: at most `maxDevices` devices, the cap named.
    @Test func aFloodOfMACsIsCappedAndNamed() throws {
        var pcap = Data([0xd4, 0xc3, 0xb2, 0xa1, 2, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0, 0, 1, 0, 0, 0])
        func be16(_ v: Int) -> [UInt8] { [UInt8(v >> 8 & 0xff), UInt8(v & 0xff)] }
        for i in 0..<10_500 {
            let mac: [UInt8] = [0x02, 0x10, UInt8(i >> 16 & 0xff), UInt8(i >> 8 & 0xff), UInt8(i & 0xff), 0x01]
            var dhcp = [UInt8](repeating: 0, count: 240)
            dhcp[0] = 1; dhcp[1] = 1; dhcp[2] = 6
            dhcp.replaceSubrange(28..<34, with: mac)
            dhcp.replaceSubrange(236..<240, with: [0x63, 0x82, 0x53, 0x63])
            dhcp += [53, 1, 1, 12, 4, 0x68, 0x6f, 0x73, 0x74, 255]
            let udp = be16(68) + be16(67) + be16(8 + dhcp.count) + [0, 0] + dhcp
            let ip: [UInt8] = [0x45, 0] + be16(20 + udp.count) + [0, 0, 0, 0, 64, 17, 0, 0, 0, 0, 0, 0, 255, 255, 255, 255]
            let frame: [UInt8] = [255, 255, 255, 255, 255, 255] + mac + [0x08, 0x00] + ip + udp
            var header = [UInt8]()
            for v in [UInt32(1_700_000_000 + i / 1000), UInt32(i % 1000 * 1000), UInt32(frame.count), UInt32(frame.count)] {
                header += [UInt8(v & 0xff), UInt8(v >> 8 & 0xff), UInt8(v >> 16 & 0xff), UInt8(v >> 24 & 0xff)]
            }
            pcap.append(contentsOf: header + frame)
        }
        let path = CLI.temporaryDirectory().appendingPathComponent("macflood.pcap").path
        try pcap.write(to: URL(fileURLWithPath: path))
        let run = try CLI.run(["-r", path, "--devices", "--format", "ndjson"])
        let devices = Self.rows(run.text)
        #expect(devices.count == 10_000, "\(devices.count)")
        #expect(devices.allSatisfy { ($0["names"] as? [[String: String]])?.first?["name"] == "host" })
        #expect(run.stderr.contains("devices_limited"), "\(run.stderr)")
    }

    /// A phone's private cache is its device's (RFC 9111 §1): its IPv6 request for a page it
    /// fetched fresh over IPv4 is avoidable; the second phone's first download of what the first
    /// fetched, from the address the first phone left, is not (it was judged avoidable when the
    /// cache was keyed by address).
    @Test func eachPhoneHasOnePrivateCacheAcrossItsAddresses() throws {
        let rows = Self.rows(try CLI.run(["-r", CLI.capture("hotspot-sample.pcap"), "--format", "ndjson", "--quiet"]).text)
        let avoidable = rows.filter { $0["cache_avoidable"] as? Bool == true }
        #expect(avoidable.count == 2, "\(avoidable.map { "\($0["device"] ?? "") \($0["url"] ?? "")" })")
        for r in avoidable {
            #expect((r["client_ip"] as? String ?? "").contains(":") && (r["url"] as? String ?? "").hasSuffix("/page.html"), "\(r)")
        }
        #expect(Set(avoidable.compactMap { $0["device"] as? String }) == ["02:00:00:00:00:11", "02:00:00:00:00:22"])
    }
}
