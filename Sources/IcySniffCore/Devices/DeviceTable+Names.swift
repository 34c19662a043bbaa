/// Where devices get their names and addresses from beside their packets' link-layer addresses:
/// the hotspot's DHCPv4, DHCPv6, mDNS and NetBIOS traffic, and its lease file (`--leases`).
extension DeviceTable {
    // MARK: DHCPv4, DHCPv6, mDNS

    /// A UDP datagram of DHCPv4 (ports 67, 68), DHCPv6 (546, 547) or mDNS (5353) from `mac`.
    public func observeService(_ d: UDPDatagram, mac: MACAddress?) {
        let s = d.source.port, t = d.destination.port
        if (s == 68 && t == 67) || (s == 67 && t == 68) { dhcp(d, mac: mac) }
        else if (s == 546 && t == 547) || (s == 547 && t == 546) { dhcpv6(d, mac: mac) }
        else if s == 5353 { mdns(d, mac: mac) }
        else if t == 137 { netbios(d, mac: mac) }
    }

    /// DHCPv4 (RFC 2131, 2132): a client's host name (option 12), FQDN (81) and vendor class (60);
    /// a server's ACK gives `yiaddr` to `chaddr`; a RELEASE ends the client's `ciaddr`.
    func dhcp(_ d: UDPDatagram, mac sender: MACAddress?) {
        let p = d.payload
        guard p.count >= 240, p.u8(1) == 1, p.u8(2) == 6, p.be32(236) == 0x6382_5363 else { return }
        let op = p.u8(0)
        let mac = MACAddress(p, at: 28)
        guard mac.isIndividual else { return }
        var type: UInt8 = 0, hostName: String? = nil, fqdn: String? = nil, vendor: String? = nil
        var i = 240
        while i < p.count {
            let code = p.u8(i)
            if code == 255 { break }
            if code == 0 { i += 1; continue }
            guard i + 1 < p.count else { break }
            let length = Int(p.u8(i + 1)), v = i + 2
            guard v + length <= p.count else { break }
            switch code {
            case 53 where length == 1: type = p.u8(v)
            case 12: hostName = Self.text(p, v, length)
            case 60: vendor = Self.text(p, v, length)
            case 81 where length >= 3:
                // Flags, two RCODEs, then the name: DNS wire format when the E bit is set.
                fqdn = p.u8(v) & 0x04 != 0 ? Self.wireName(p, v + 3, length - 3) : Self.text(p, v + 3, length - 3)
            default: break
            }
            i = v + length
        }
        guard let device = device(mac, at: d.timestamp) else { return }
        if op == 1 {
            devices[device].speaks = true
            if let hostName { name(device, hostName, .dhcp) }
            if let fqdn { name(device, fqdn, .dhcpFQDN) }
            if let vendor { devices[device].vendorClass = vendor }
            if type == 7 { release(IPAddress(ipv4: p.be32(12)), by: device, at: d.timestamp) }
        } else if op == 2 && type == 5 {
            let given = IPAddress(ipv4: p.be32(16))
            if !Self.isUnspecified(given) { assign(given, to: device, at: d.timestamp) }
            if let sender, let server = byMAC[sender] { devices[server].dhcpServer = true }
        }
    }

    /// DHCPv6 (RFC 8415): a client's FQDN (option 39, RFC 4704) and vendor class (16); a server's
    /// Reply gives the IA_NA and IA_TA addresses to the client its Client Identifier names (a
    /// DUID with a link-layer address) or whose transaction it answers.
    func dhcpv6(_ d: UDPDatagram, mac: MACAddress?) {
        let p = d.payload
        guard p.count >= 4 else { return }
        let type = p.u8(0)
        let xid = UInt32(p.u8(1)) << 16 | UInt32(p.u8(2)) << 8 | UInt32(p.u8(3))
        var duidMAC: MACAddress? = nil, fqdn: String? = nil, vendor: String? = nil
        var given: [IPAddress] = []
        func options(_ start: Int, _ end: Int, depth: Int) {
            var i = start
            while i + 4 <= end {
                let code = p.be16(i), length = Int(p.be16(i + 2)), v = i + 4
                guard v + length <= end else { return }
                switch code {
                case 1 where length >= 10:
                    // DUID-LLT (1) or DUID-LL (3) of hardware type Ethernet (1).
                    let duid = p.be16(v), hw = p.be16(v + 2)
                    if hw == 1 && duid == 1 && length == 14 { duidMAC = MACAddress(p, at: v + 8) }
                    if hw == 1 && duid == 3 && length == 10 { duidMAC = MACAddress(p, at: v + 4) }
                case 39 where length >= 2: fqdn = Self.wireName(p, v + 1, length - 1)
                case 16 where length >= 6:
                    let n = Int(p.be16(v + 4))
                    if v + 6 + n <= v + length { vendor = Self.text(p, v + 6, n) }
                case 3 where depth == 0 && length >= 12: options(v + 12, v + length, depth: 1)   // IA_NA
                case 4 where depth == 0 && length >= 4: options(v + 4, v + length, depth: 1)     // IA_TA
                case 5 where depth == 1 && length >= 24: given.append(IPAddress(high: p.be64(v), low: p.be64(v + 8)))
                default: break
                }
                i = v + length
            }
        }
        options(4, p.count, depth: 0)
        switch type {
        case 1, 3, 5, 6, 8, 11:   // Solicit, Request, Renew, Rebind, Release, Information-request
            guard let sender = mac ?? duidMAC, sender.isIndividual, let device = device(sender, at: d.timestamp) else { return }
            devices[device].speaks = true
            if dhcpv6Clients.count >= 1024 { dhcpv6Clients.removeAll() }
            dhcpv6Clients[xid] = sender
            if let fqdn { name(device, fqdn, .dhcpv6) }
            if let vendor { devices[device].vendorClass = devices[device].vendorClass ?? vendor }
            if type == 8 { for a in given { release(a, by: device, at: d.timestamp) } }
        case 7:   // Reply
            guard let client = duidMAC ?? dhcpv6Clients[xid], client.isIndividual, let device = device(client, at: d.timestamp) else { return }
            for a in given { assign(a, to: device, at: d.timestamp) }
            if let mac, let server = byMAC[mac] { devices[server].dhcpServer = true }
        default:
            break
        }
    }

    /// mDNS (RFC 6762): an answer a device sends about itself — an A or AAAA record of a `.local`
    /// name whose address is its own (the packet's source, or one it used) names it; a TXT record
    /// of `_device-info._tcp.local` gives its `model=`.
    func mdns(_ d: UDPDatagram, mac: MACAddress?) {
        let p = d.payload
        guard let mac, mac.isIndividual, p.count >= 12, p.be16(2) & 0x8000 != 0 else { return }
        let questions = Int(p.be16(4))
        let records = Int(p.be16(6)) + Int(p.be16(8)) + Int(p.be16(10))
        var offset = 12
        for _ in 0..<questions {
            guard let (_, next) = DNSTracker.readName(p, at: offset), next + 4 <= p.count else { return }
            offset = next + 4
        }
        guard let device = device(mac, at: d.timestamp) else { return }
        for _ in 0..<min(records, 256) {
            guard let (owner, next) = DNSTracker.readName(p, at: offset), next + 10 <= p.count else { return }
            let type = p.be16(next), length = Int(p.be16(next + 8)), data = next + 10
            guard data + length <= p.count else { return }
            offset = data + length
            let lower = owner.lowercased()
            switch type {
            case 1 where length == 4, 28 where length == 16:
                let address = length == 4 ? IPAddress(ipv4: p.be32(data)) : IPAddress(high: p.be64(data), low: p.be64(data + 8))
                guard lower.hasSuffix(".local") else { continue }
                let own = address == d.source.address
                    || devices[device].assignments.contains { assignments[$0].address == address }
                guard own else { continue }
                devices[device].speaks = true
                name(device, owner, .mdns)
                assign(address, to: device, at: d.timestamp)
            case 16 where lower.hasSuffix("._device-info._tcp.local"):
                var i = data
                while i < data + length {
                    let n = Int(p.u8(i))
                    guard i + 1 + n <= data + length else { break }
                    if let text = Self.text(p, i + 1, n), text.lowercased().hasPrefix("model=") {
                        devices[device].model = String(text.dropFirst(6))
                    }
                    i += 1 + n
                }
            default:
                break
            }
        }
    }

    /// NetBIOS name service (RFC 1002): a name registration or refresh (opcode 5, 8 or 9) that a
    /// device sends for its own workstation or server name (suffix 0x00 or 0x20) names it; the
    /// name is the question's, first-level encoded (two letters 'A'…'P' a byte).
    func netbios(_ d: UDPDatagram, mac: MACAddress?) {
        let p = d.payload
        guard let mac, mac.isIndividual, p.count >= 12 + 34, p.be16(2) & 0x8000 == 0, p.be16(4) == 1 else { return }
        let opcode = (p.be16(2) >> 11) & 0xF
        guard opcode == 5 || opcode == 8 || opcode == 9, p.u8(12) == 32 else { return }
        var bytes: [UInt8] = []
        for i in 0..<16 {
            let hi = p.u8(13 + 2 * i), lo = p.u8(14 + 2 * i)
            guard (0x41...0x50).contains(hi), (0x41...0x50).contains(lo) else { return }
            bytes.append((hi - 0x41) << 4 | (lo - 0x41))
        }
        guard bytes[15] == 0x00 || bytes[15] == 0x20 else { return }
        var name = bytes[0..<15]
        while name.last == 0x20 { name.removeLast() }
        guard !name.isEmpty, name.allSatisfy({ $0 >= 0x21 && $0 < 0x7F }), let device = device(mac, at: d.timestamp) else { return }
        devices[device].speaks = true
        self.name(device, String(decoding: name, as: UTF8.self), .netbios)
    }

    static func text(_ p: UnsafeRawBufferPointer, _ start: Int, _ count: Int) -> String? {
        guard count > 0, start >= 0, start + count <= p.count else { return nil }
        var bytes = Array(UnsafeRawBufferPointer(rebasing: p[start..<(start + count)]))
        while bytes.last == 0 { bytes.removeLast() }
        return bytes.isEmpty ? nil : String(decoding: bytes, as: UTF8.self)
    }

    /// A DNS name in wire format (RFC 1035 labels, no compression), as DHCP's FQDN options carry it;
    /// a partial name (no final zero) too.
    static func wireName(_ p: UnsafeRawBufferPointer, _ start: Int, _ count: Int) -> String? {
        var labels: [String] = []
        var i = start
        let end = start + count
        while i < end {
            let n = Int(p.u8(i))
            if n == 0 { break }
            guard n < 64, i + 1 + n <= end, let label = text(p, i + 1, n) else { return nil }
            labels.append(label)
            i += 1 + n
        }
        return labels.isEmpty ? nil : labels.joined(separator: ".")
    }

    // MARK: Lease files

    /// Names and addresses from the hotspot's own lease file (`--leases`): dnsmasq's (`expiry mac
    /// address name client-id` a line; its IPv6 lines name no link-layer address and are skipped)
    /// or ISC dhcpd's (`lease ADDRESS { hardware ethernet MAC; client-hostname "NAME"; }`).
    /// A hint: packets win (a device's own DHCP name is listed first), and an address a lease
    /// names is used only for a client address no packet tied to a link-layer address.
    /// Answers how many leases were read.
    @discardableResult
    public func load(leases text: String) -> Int {
        var read = 0
        func add(_ mac: MACAddress, _ address: IPAddress?, _ hostName: String?) {
            guard mac.isIndividual, let device = device(mac, at: .zero) else { return }
            if let hostName, hostName != "*" { name(device, hostName, .leaseFile) }
            if let address { leased[address] = device }
            read += 1
        }
        if text.contains("lease ") && text.contains("{") {
            var address: IPAddress? = nil, mac: MACAddress? = nil, hostName: String? = nil
            for raw in text.split(separator: "\n") {
                let line = Self.trimmed(raw, " \t;")
                let words = line.split(separator: " ", omittingEmptySubsequences: true)
                if words.first == "lease", words.count >= 2 { address = IPAddress(text: String(words[1])); mac = nil; hostName = nil }
                else if words.count >= 3, words[0] == "hardware", words[1] == "ethernet" { mac = MACAddress(text: String(words[2])) }
                else if words.count >= 2, words[0] == "client-hostname" { hostName = Self.trimmed(Substring(words[1...].joined(separator: " ")), "\"") }
                else if line == "}", let m = mac { add(m, address, hostName); mac = nil }
            }
        } else {
            for raw in text.split(separator: "\n") {
                let words = raw.split(separator: " ", omittingEmptySubsequences: true)
                guard words.count >= 4, let mac = MACAddress(text: String(words[1])) else { continue }
                add(mac, IPAddress(text: String(words[2])), String(words[3]))
            }
        }
        return read
    }

    static func trimmed(_ s: Substring, _ set: String) -> String {
        var s = s
        while let c = s.first, set.contains(c) { s.removeFirst() }
        while let c = s.last, set.contains(c) { s.removeLast() }
        return String(s)
    }
}
