#if canImport(Glibc)
import Glibc
#endif

/// Who is who on a hotspot (`--devices`): a device is its link-layer address where the capture
/// has one (`LinkSource`), else its IP address; each holds the addresses it used, with the time
/// ranges in which they were its, the names it gave itself (DHCPv4, DHCPv6, mDNS; a lease file
/// as a hint), hints of its software (DHCP vendor classes, mDNS `model=`), and the connections,
/// requests and bytes of which it was the client.
///
/// Input, on the pipeline's thread: the sender's link-layer and IP address of each decoded packet
/// (`observe`), the UDP datagrams of DHCPv4, DHCPv6 and mDNS (`observeService`), each connection
/// as it ends (`attribute`). Output: `summaries()`.
///
/// An address that a second link-layer address later uses starts a new assignment: two devices
/// are never merged, and a connection belongs to the device that held its client address when
/// it began. A link-layer address that sends from more than `maxAddressesPerDevice` addresses
/// is a router (it forwards what others sent): it keeps the addresses it had, and is listed only
/// if it was the client of a connection itself.
///
/// Bounded: `maxDevices` devices (a flood of random MACs is an attack too: past it the rest are
/// counted, `devices_limited`), `maxAddressesPerDevice` addresses and `maxNames` names each,
/// `maxAssignments` in all.
public final class DeviceTable {
    public static let maxDevices = 10_000
    public static let maxAddressesPerDevice = 64
    public static let maxNames = 16
    public static let maxAssignments = 200_000
    public static let maxAssignmentsPerAddress = 64
    public static let maxHints = 8

    public enum NameSource: String, Sendable {
        case dhcp, dhcpFQDN = "dhcp-fqdn", dhcpv6, mdns, netbios, leaseFile = "lease-file"
    }

    struct Assignment {
        var address: IPAddress
        var device: Int
        var first: Timestamp
        var last: Timestamp
        /// A DHCP release ended it: the next user of the address starts a new assignment.
        var released = false
    }

    struct Device {
        var mac: MACAddress?
        var firstSeen: Timestamp
        var names: [(name: String, source: NameSource)] = []
        var vendorClass: String? = nil
        var model: String? = nil
        /// Hints from what it sent: the User-Agents of its clear HTTP and its ClientHellos' JA4
        /// (at most `maxHints` each, first seen first).
        var userAgents: [String] = []
        var ja4s: [String] = []
        var assignments: [Int] = []
        /// Was the client of a connection, or spoke for itself (a DHCP client, an mDNS announcement).
        var speaks = false
        var dhcpServer = false
        var router = false
        var connections = 0
        var requests = 0
        var bytes: UInt64 = 0
        var encryptedBytes: UInt64 = 0
    }

    var devices: [Device] = []
    var byMAC: [MACAddress: Int] = [:]
    private var byBareAddress: [IPAddress: Int] = [:]
    var assignments: [Assignment] = []
    private var byAddress: [IPAddress: [Int]] = [:]
    /// The addresses a lease file gives (`load(leases:)`): used for a client address that no
    /// packet tied to a link-layer address.
    var leased: [IPAddress: Int] = [:]
    /// DHCPv6 transactions of clients, by transaction id: whose Reply is it.
    var dhcpv6Clients: [UInt32: MACAddress] = [:]
    /// Recent senders and receivers, direct-mapped by a hash of the pair: a packet whose pair
    /// is here costs a compare and a store, not a dictionary look-up (both directions of the
    /// flows in progress stay in it). The sender's latest time is kept in its entry and written
    /// to its assignment when the entry is replaced or the table is read (`settle`).
    ///
    /// Unsafe by measure: as arrays, the two look-ups a packet makes retained and released
    /// their buffers and checked uniqueness on the store (NDJSON of the 200 MB benchmark 5 %
    /// slower on one core); these are fixed blocks of 256 entries the table owns, allocated
    /// in `init`, freed in `deinit`, indexed only by `slot` (0…255).
    private struct Recent { var mac: UInt64 = 0; var address = IPAddress(high: 0, low: 0); var assignment = -1; var last = Timestamp.zero }
    private let recent = UnsafeMutablePointer<Recent>.allocate(capacity: 256)
    private let recentReceivers = UnsafeMutablePointer<Recent>.allocate(capacity: 256)
    @inline(__always) private static func slot(_ mac: MACAddress, _ a: IPAddress) -> Int {
        Int(truncatingIfNeeded: ((mac.raw ^ a.low ^ (a.high &* 31)) &* 0x9E37_79B9_7F4A_7C15) >> 56)
    }
    /// Devices not kept past `maxDevices` (`devices_limited`).
    public private(set) var devicesNotKept = 0
    /// Where names go for the readers on other threads: `--client NAME`
    /// (`TransactionFilter.directory`) and the web view (`/api/devices`).
    public var directory: DeviceDirectory? = nil
    /// Link-layer addresses were seen: devices are keyed by them.
    public private(set) var sawLinkLayer = false

    public init() {
        recent.initialize(repeating: Recent(), count: 256)
        recentReceivers.initialize(repeating: Recent(), count: 256)
    }

    deinit {
        recent.deallocate()
        recentReceivers.deallocate()
    }

    /// Writes the senders' latest times kept in `recent` to their assignments.
    private func settle() {
        for i in 0..<256 where recent[i].assignment >= 0 {
            let a = recent[i].assignment
            assignments[a].last = max(assignments[a].last, recent[i].last)
        }
    }

    // MARK: Input

    /// A packet's sender: `mac` nil where the link type has none. Answers whether the pair was
    /// a recent one (its flow is known: the caller may skip the receiver).
    @inline(__always) @discardableResult
    public func observe(mac: MACAddress?, address: IPAddress, at time: Timestamp) -> Bool {
        guard let mac else { return false }
        let slot = Self.slot(mac, address)
        let entry = recent + slot
        if entry.pointee.mac == mac.raw && entry.pointee.address == address && entry.pointee.assignment >= 0 {
            entry.pointee.last = time
            return true
        }
        return observeNew(mac, address, at: time, entry: entry)
    }

    /// `observe`'s slow path: a pair not among the recent ones.
    private func observeNew(_ mac: MACAddress, _ address: IPAddress, at time: Timestamp, entry: UnsafeMutablePointer<Recent>) -> Bool {
        guard mac.isIndividual else { return false }
        sawLinkLayer = true
        if entry.pointee.assignment >= 0 {
            let a = entry.pointee.assignment
            assignments[a].last = max(assignments[a].last, entry.pointee.last)
        }
        guard !Self.isUnspecified(address), let device = device(mac, at: time) else { return false }
        let index = assign(address, to: device, at: time, sent: true) ?? -1
        entry.pointee = Recent(mac: mac.raw, address: address, assignment: index, last: time)
        return false
    }

    /// A User-Agent the device's clear HTTP carried (the emitter gives one per connection).
    func noteAgent(_ agent: String, of mac: UInt64) {
        guard mac != 0, let i = byMAC[MACAddress(raw: mac)] else { return }
        Self.note(agent, in: &devices[i].userAgents)
    }

    private static func note(_ hint: String, in list: inout [String]) {
        guard list.count < maxHints, !list.contains(hint) else { return }
        list.append(String(hint.prefix(255)))
    }

    /// Transactions of the connections still open, by connection id (`attribute` takes them).
    private var requestsByConnection: [UInt64: Int] = [:]

    /// The connection counted last and its count not yet in `requestsByConnection`: the
    /// transactions of a keep-alive connection come one after another.
    private var counting: (connection: UInt64, requests: Int) = (0, 0)

    func countRequest(on connection: UInt64) {
        if counting.connection == connection { counting.requests += 1; return }
        if counting.requests > 0 { requestsByConnection[counting.connection, default: 0] += counting.requests }
        counting = (connection, 1)
    }

    private func takeRequests(of connection: UInt64) -> Int {
        var n = requestsByConnection.removeValue(forKey: connection) ?? 0
        if counting.connection == connection { n += counting.requests; counting = (0, 0) }
        return n
    }

    /// A packet's receiver: weaker evidence than a sender, so it ties an address to a link-layer
    /// address only while no sender has (a client whose own packets the capture missed).
    @inline(__always)
    public func observe(destination mac: MACAddress?, address: IPAddress, at time: Timestamp) {
        guard let mac else { return }
        let entry = recentReceivers + Self.slot(mac, address)
        if entry.pointee.mac == mac.raw && entry.pointee.address == address { return }
        entry.pointee = Recent(mac: mac.raw, address: address, assignment: 0)
        guard mac.isIndividual, !Self.isUnspecified(address), byAddress[address] == nil,
              let device = device(mac, at: time) else { return }
        assign(address, to: device, at: time)
    }

    /// IPv6 neighbor discovery: an Advertisement's target is its sender's, as is the target of
    /// a Solicitation sent from `::` (Duplicate Address Detection: an address about to be used);
    /// any other Solicitation's source is its sender's.
    public func observe(_ n: NeighborDiscovery, mac: MACAddress?) {
        if n.advertisement || Self.isUnspecified(n.source) {
            guard let mac, mac.isIndividual, !Self.isUnspecified(n.target), let device = device(mac, at: n.timestamp) else { return }
            sawLinkLayer = true
            assign(n.target, to: device, at: n.timestamp)
        } else {
            observe(mac: mac, address: n.source, at: n.timestamp)
        }
    }

    /// A connection that ended: counted for the device that held its client address when it began.
    public func attribute(_ c: Connection) {
        let address = c.client.address
        var index = assignment(holding: address, at: c.began).map { assignments[$0].device }
        if index == nil, let device = leased[address] {
            index = device
            assign(address, to: device, at: c.began)
        }
        if index == nil {
            // No link-layer address for it: the device is its IP address.
            if let known = byBareAddress[address] { index = known }
            else if devices.count < Self.maxDevices {
                devices.append(Device(mac: nil, firstSeen: c.began))
                index = devices.count - 1
                byBareAddress[address] = index
                _ = assign(address, to: index!, at: c.began)
            } else { devicesNotKept += 1 }
        }
        c.deviceMAC = mac(of: address, at: c.began)
        guard let i = index else { return }
        if let list = byAddress[address], let a = list.last(where: { assignments[$0].device == i }) {
            assignments[a].last = max(assignments[a].last, c.times.last)
        }
        devices[i].speaks = true
        if let ja4 = c.tls?.ja4 { Self.note(ja4, in: &devices[i].ja4s) }
        devices[i].connections += 1
        devices[i].requests += takeRequests(of: c.id)
        let bytes = c.bytesFromClient + c.bytesFromServer
        devices[i].bytes += bytes
        if c.encryptedWithoutKeys { devices[i].encryptedBytes += bytes }
    }

    /// The link-layer address of the device that held `address` at `time` (0: none known, or a
    /// router's, which forwards what several devices sent): the `device` of transactions and
    /// connections, and what `--client MAC` matches.
    public func mac(of address: IPAddress, at time: Timestamp) -> UInt64 {
        guard let a = assignment(holding: address, at: time) else { return 0 }
        let d = devices[assignments[a].device]
        return d.router ? 0 : d.mac?.raw ?? 0
    }

    /// The assignment of `address` at `time`: the latest that began by then, else its first.
    private func assignment(holding address: IPAddress, at time: Timestamp) -> Int? {
        guard let list = byAddress[address], let first = list.first else { return nil }
        return list.last(where: { assignments[$0].first <= time }) ?? first
    }

    // MARK: Devices and addresses

    func device(_ mac: MACAddress, at time: Timestamp) -> Int? {
        if let i = byMAC[mac] {
            if devices[i].firstSeen == .zero { devices[i].firstSeen = time }   // a lease file's, now seen
            return i
        }
        guard devices.count < Self.maxDevices else { devicesNotKept += 1; return nil }
        devices.append(Device(mac: mac, firstSeen: time))
        byMAC[mac] = devices.count - 1
        return devices.count - 1
    }

    /// The device's assignment of `address` now: its current one, or a new one.
    /// `sent`: the device sent from it. A second IPv4 address it sends from while it still sends
    /// from another (within a second) makes it a router: it forwards what others sent.
    @discardableResult
    func assign(_ address: IPAddress, to device: Int, at time: Timestamp, sent: Bool = false) -> Int? {
        if let list = byAddress[address], let latest = list.last,
           assignments[latest].device == device && !assignments[latest].released {
            assignments[latest].last = max(assignments[latest].last, time)
            if assignments[latest].first == .zero { assignments[latest].first = time }
            return latest
        }
        guard devices[device].assignments.count < Self.maxAddressesPerDevice else {
            devices[device].router = true
            return nil
        }
        guard assignments.count < Self.maxAssignments else { return nil }
        if sent && address.isIPv4 && !devices[device].router {
            // The times kept in `recent` first (256 entries: a new address, not every packet).
            settle()
            let recently = Timestamp(nanoseconds: time.nanoseconds - 1_000_000_000)
            if devices[device].assignments.contains(where: { a in
                assignments[a].address.isIPv4 && !assignments[a].released && assignments[a].last >= recently && assignments[a].first != .zero
            }) { devices[device].router = true }
        }
        assignments.append(Assignment(address: address, device: device, first: time, last: time))
        let index = assignments.count - 1
        // At most `maxAssignmentsPerAddress` kept per address (the newest): an address handed
        // between MACs over and over is not a list that every look-up walks.
        byAddress[address, default: []].append(index)
        if byAddress[address]!.count > Self.maxAssignmentsPerAddress { byAddress[address]!.removeFirst() }
        devices[device].assignments.append(index)
        return index
    }

    func release(_ address: IPAddress, by device: Int, at time: Timestamp) {
        guard let latest = byAddress[address]?.last, assignments[latest].device == device else { return }
        assignments[latest].last = max(assignments[latest].last, time)
        assignments[latest].released = true
        for i in 0..<256 where recent[i].assignment == latest {
            assignments[latest].last = max(assignments[latest].last, recent[i].last)
            recent[i].assignment = -1
        }
    }

    func name(_ device: Int, _ name: String, _ source: NameSource) {
        let name = String(name.unicodeScalars.filter { $0.value >= 0x20 && $0.value != 0x7F }.prefix(253).map(Character.init))
        guard !name.isEmpty, devices[device].names.count < Self.maxNames,
              !devices[device].names.contains(where: { $0.name == name && $0.source == source }) else { return }
        // Kept in the order of their sources' rank (packets before a lease file), so the first
        // is the device's name.
        let at = devices[device].names.firstIndex { Self.rank($0.source) > Self.rank(source) } ?? devices[device].names.endIndex
        devices[device].names.insert((name, source), at: at)
        if let mac = devices[device].mac { directory?.set(devices[device].names.map(\.name), for: mac.raw) }
    }

    static func isUnspecified(_ a: IPAddress) -> Bool {
        (a.high == 0 && a.low == 0) || (a.isIPv4 && (a.low & 0xFFFF_FFFF == 0 || a.low & 0xFFFF_FFFF == 0xFFFF_FFFF))
    }

    // MARK: Output

    /// Each named device's first name, by link-layer address (`Report.nameDevices`).
    public func names() -> [UInt64: String] {
        var out: [UInt64: String] = [:]
        for d in devices { if let mac = d.mac, let name = d.names.first?.name { out[mac.raw] = name } }
        return out
    }

    /// Every name any device gave itself (`--client NAME` says when none matches).
    public var allNames: [String] { devices.flatMap { $0.names.map(\.name) } }

    static func rank(_ s: NameSource) -> Int { [NameSource.dhcp, .dhcpFQDN, .dhcpv6, .mdns, .netbios, .leaseFile].firstIndex(of: s)! }

    /// The devices to list: those that spoke for themselves or were the client of a connection;
    /// not a DHCP server nor a router unless it was a client itself. In order of first sight.
    public func summaries() -> [DeviceSummary] {
        settle()
        var out: [DeviceSummary] = []
        let order = devices.indices.sorted { (devices[$0].firstSeen, $0) < (devices[$1].firstSeen, $1) }
        for d in order.map({ devices[$0] }) where d.speaks && (d.connections > 0 || !(d.dhcpServer || d.router)) {
            let addresses = d.assignments.map { a in
                DeviceSummary.AddressRange(address: assignments[a].address,
                                           first: assignments[a].first == .zero ? nil : assignments[a].first,
                                           last: assignments[a].last == .zero ? nil : assignments[a].last)
            }
            out.append(DeviceSummary(id: "D\(out.count + 1)", mac: d.mac, names: d.names.map { ($0.name, $0.source.rawValue) },
                                     addresses: addresses, osHint: DeviceSummary.osHint(vendorClass: d.vendorClass, model: d.model),
                                     vendorClass: d.vendorClass, model: d.model, userAgents: d.userAgents, ja4s: d.ja4s,
                                     connections: d.connections, requests: d.requests,
                                     bytes: d.bytes, encryptedBytes: d.encryptedBytes, firstSeen: d.firstSeen))
        }
        return out
    }
}

/// One device as `--devices` lists it.
public struct DeviceSummary: Sendable {
    public struct AddressRange: Sendable {
        public var address: IPAddress
        /// nil: known from a lease file only.
        public var first: Timestamp?
        public var last: Timestamp?
    }
    public var id: String
    public var mac: MACAddress?
    public var names: [(name: String, source: String)]
    public var addresses: [AddressRange]
    public var osHint: String?
    public var vendorClass: String?
    public var model: String?
    public var userAgents: [String]
    public var ja4s: [String]
    public var connections: Int
    public var requests: Int
    public var bytes: UInt64
    public var encryptedBytes: UInt64
    public var firstSeen: Timestamp

    /// The best name: its own DHCP or mDNS name before a lease file's.
    public var name: String? { names.first?.name }

    /// A hint of the operating system from documented behaviour, never a fingerprint database:
    /// Android's DHCP client sends `android-dhcp-VERSION` (its dhcpcd and DhcpClient), Windows
    /// `MSFT 5.0`, BusyBox's udhcpc `udhcp VERSION`, dhcpcd `dhcpcd-VERSION:OS:…`; an mDNS
    /// `_device-info` record's `model=` (Apple's devices send it) is given as the model.
    static func osHint(vendorClass: String?, model: String?) -> String? {
        if let v = vendorClass?.lowercased() {
            if v.hasPrefix("android-dhcp-") { return "Android \(v.dropFirst("android-dhcp-".count))" }
            if v.hasPrefix("android") { return "Android" }
            if v.hasPrefix("msft") { return "Windows" }
            if v.hasPrefix("udhcp") { return "Linux (BusyBox udhcpc)" }
            if v.hasPrefix("dhcpcd") {
                let parts = vendorClass!.split(separator: ":")
                return parts.count >= 2 ? "\(parts[1]) (dhcpcd)" : "dhcpcd"
            }
        }
        if let model { return "model \(model)" }
        return nil
    }
}

/// The names the run's devices gave themselves, by link-layer address, for readers on other
/// threads: a filter (`--client NAME`: the export thread filters while the pipeline's table
/// learns) and the web view's server (`/api/devices`, polled by the page as names come). The
/// table writes (`DeviceTable.directory`), readers read, under one lock; a name learned after a
/// transaction was filtered does not bring that transaction back. Bounded by the table's caps
/// (10,000 devices, 16 names each).
public final class DeviceDirectory: @unchecked Sendable {
    private let lock = Lock()
    private var names: [UInt64: [String]] = [:]
    /// The change that last set each device's names, and the latest change: a reader asks for
    /// what changed after the last it saw.
    private var changedAt: [UInt64: Int] = [:]
    private var changes = 0

    public init() {}

    /// A device's names, its own name first (the table's order: packets before a lease file).
    func set(_ list: [String], for mac: UInt64) {
        var unique: [String] = []
        for n in list where !unique.contains(n) { unique.append(n) }
        lock.withLock {
            guard names[mac] != unique else { return }
            names[mac] = unique
            changes += 1
            changedAt[mac] = changes
        }
    }

    public func names(of mac: UInt64) -> [String] { lock.withLock { names[mac] ?? [] } }

    /// The devices whose names changed after change `after`, by address, and the latest change.
    public func changed(after: Int) -> (latest: Int, devices: [(mac: MACAddress, names: [String])]) {
        lock.withLock {
            let list = changedAt.filter { $0.value > after }.keys.sorted().map { (MACAddress(raw: $0), names[$0] ?? []) }
            return (changes, list)
        }
    }

    /// A shell glob (`*`, `?`, `[…]`), case ignored.
    public static func glob(_ pattern: String, matches name: String) -> Bool {
        fnmatch(pattern.lowercased(), name.lowercased(), 0) == 0
    }
}
