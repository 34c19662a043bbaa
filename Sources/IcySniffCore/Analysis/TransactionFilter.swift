#if canImport(Glibc)
import Glibc
#endif

/// What people filter on in an HTTP inspector: the device (client address or network), status
/// class or code, method, host, content type, duration and size. An empty filter lets
/// everything through.
public struct TransactionFilter: Sendable {
    /// Client addresses or networks (`--client 10.0.0.7`, `--client 192.168.1.0/24`, IPv6 too):
    /// a transaction, or a connection, passes when its client is in one of them.
    public var clients: [ClientNetwork] = []
    /// Devices by link-layer address (`--client 02:00:00:00:00:11`): a transaction, or a
    /// connection, passes when its client's device is one of them, whatever address it used.
    public var devices: Set<UInt64> = []
    /// Devices by the names they gave themselves (`--client 'Pixel*'`: shell globs, case
    /// ignored), looked up in `directory` as the run learns them.
    public var deviceNames: [String] = []
    /// What the run's device table has learned of names (set when `deviceNames` is not empty;
    /// `PipelineOptions.deviceDirectory` hands it to the table).
    public private(set) var directory: DeviceDirectory? = nil
    /// "2xx"-style classes (1...5) and exact codes; a missing response counts as status 0.
    public var statusClasses: Set<Int> = []
    public var statuses: Set<Int> = []
    public var methods: Set<String> = []
    /// Case-insensitive substrings of the host.
    public var hosts: [String] = []
    /// Case-insensitive substrings of the response Content-Type.
    public var contentTypes: [String] = []
    public var minDurationMilliseconds: Double? = nil
    public var minSize: UInt64? = nil

    public init() {}

    public var isEmpty: Bool {
        clients.isEmpty && devices.isEmpty && deviceNames.isEmpty && statusClasses.isEmpty && statuses.isEmpty && methods.isEmpty && hosts.isEmpty && contentTypes.isEmpty
            && minDurationMilliseconds == nil && minSize == nil
    }

    /// Nothing but devices (or nothing): what a connection without keys shows can be matched.
    public var choosesOnlyDevices: Bool {
        var rest = self
        rest.clients = []
        rest.devices = []
        rest.deviceNames = []
        return rest.isEmpty
    }

    /// It names devices (by address, link-layer address or name).
    public var choosesDevices: Bool {
        !clients.isEmpty || !devices.isEmpty || !deviceNames.isEmpty
    }

    /// Parses "4xx,5xx,304".
    public mutating func addStatuses(_ text: String) throws(FilterError) {
        for part in text.split(separator: ",") {
            let p = part.trimmingASCIIWhitespace().lowercased()
            if p.count == 3, p.hasSuffix("xx"), let c = Int(p.prefix(1)), (1...5).contains(c) { statusClasses.insert(c); continue }
            guard let code = Int(p), (0...999).contains(code) else { throw FilterError(message: "invalid status '\(p)': use a code (404) or a class (4xx)") }
            statuses.insert(code)
        }
    }

    /// Whether a connection's client (its address, its device's link-layer address) is one the
    /// filter asks for (always, without `clients` and `devices`).
    public func matchesClient(_ address: IPAddress, device: UInt64 = 0) -> Bool {
        if !choosesDevices || clients.contains(where: { $0.contains(address) }) { return true }
        guard device != 0 else { return false }
        if devices.contains(device) { return true }
        guard let directory, !deviceNames.isEmpty else { return false }
        return directory.names(of: device).contains { name in deviceNames.contains { DeviceDirectory.glob($0, matches: name) } }
    }

    /// `--client`'s value: a link-layer address, an address or network, or else a device's name
    /// (a glob). Something that looks like an address but is not one is an error, not a name.
    public mutating func addClient(_ text: String) throws(FilterError) {
        if let mac = MACAddress(text: text) { devices.insert(mac.raw); return }
        do {
            clients.append(try ClientNetwork(parsing: text))
        } catch {
            let addressLike = !text.isEmpty && text.allSatisfy { $0.isHexDigit || $0 == "." || $0 == ":" || $0 == "/" }
            guard !addressLike else { throw error }
            deviceNames.append(text)
            if directory == nil { directory = DeviceDirectory() }
        }
    }

    public func matches(_ t: Transaction) -> Bool {
        if !matchesClient(t.connection.client.address, device: t.connection.deviceMAC) { return false }
        if !statusClasses.isEmpty || !statuses.isEmpty {
            let status = t.response?.status ?? 0
            if !(statuses.contains(status) || statusClasses.contains(status / 100)) { return false }
        }
        if !methods.isEmpty, !methods.contains((t.request?.method ?? "").uppercased()) { return false }
        if !hosts.isEmpty {
            let host = t.host.lowercased()
            if !hosts.contains(where: { host.contains($0.lowercased()) }) { return false }
        }
        if !contentTypes.isEmpty {
            let type = (t.response?.headers.first(.contentType) ?? "").lowercased()
            if !contentTypes.contains(where: { type.contains($0.lowercased()) }) { return false }
        }
        if let min = minDurationMilliseconds, t.timings.total < min { return false }
        if let min = minSize, (t.response?.body.decodedBytes ?? 0) < min { return false }
        return true
    }
}

public struct FilterError: Error, Sendable { public var message: String }

/// An address and a prefix length: `10.0.0.7` (the address alone), `192.168.1.0/24`, `fd00::/8`.
/// IPv4 is held as IPv4-mapped IPv6, as `IPAddress` holds it.
public struct ClientNetwork: Sendable, Equatable {
    public var address: IPAddress
    /// Of the 128 bits (an IPv4 /24 is 120).
    public var prefix: Int

    public init(parsing text: String) throws(FilterError) {
        let parts = text.split(separator: "/", maxSplits: 1).map(String.init)
        guard let first = parts.first else { throw FilterError(message: "invalid client '\(text)': use an address (10.0.0.7) or a network (10.0.0.0/24)") }
        guard let parsed = IPAddress(text: first) else {
            throw FilterError(message: "invalid client '\(text)': use an address (10.0.0.7) or a network (10.0.0.0/24)")
        }
        address = parsed
        let bits = parsed.isIPv4 ? 32 : 128
        var length = bits
        if parts.count == 2 {
            guard let n = Int(parts[1]), (0...bits).contains(n) else {
                throw FilterError(message: "invalid client '\(text)': the prefix length must be 0 to \(bits)")
            }
            length = n
        }
        prefix = length + (128 - bits)
    }

    public func contains(_ a: IPAddress) -> Bool {
        func masked(_ x: IPAddress) -> (UInt64, UInt64) {
            let highBits = min(prefix, 64), lowBits = max(prefix - 64, 0)
            let hm: UInt64 = highBits == 0 ? 0 : ~0 << (64 - highBits)
            let lm: UInt64 = lowBits == 0 ? 0 : ~0 << (64 - lowBits)
            return (x.high & hm, x.low & lm)
        }
        return masked(a) == masked(address)
    }
}
