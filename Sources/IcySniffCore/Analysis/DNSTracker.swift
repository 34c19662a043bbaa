/// A DNS lookup seen in the capture: the name asked, when, and the addresses answered.
public struct DNSLookup: Sendable {
    public var name: String
    public var queried: Timestamp
    public var answered: Timestamp
}

/// Watches DNS over UDP (IPv4 and IPv6) to give HAR's `dns` timing: a query and its answer whose
/// answer holds the server's address and whose name is the request's host, shortly before the
/// connection started.
public final class DNSTracker {
    private struct QueryKey: Hashable { var client: Endpoint; var id: UInt16 }
    private var queries: [QueryKey: Timestamp] = [:]
    private var byAddress: [IPAddress: [DNSLookup]] = [:]
    /// Lookups already attributed: one lookup counts for the first connection that used it only
    /// (as a browser reports it), so summed times do not count it twice.
    private var used: Set<Int64> = []
    /// A lookup answered longer than this before the SYN is not counted.
    public var maxLead: Double = 10
    let maxEntries = 100_000

    public init() {}

    func observe(_ datagram: UDPDatagram) {
        let p = datagram.payload
        guard p.count >= 12 else { return }
        let fromServer = datagram.source.port == 53
        guard fromServer || datagram.destination.port == 53 else { return }
        let id = p.be16(0)
        let flags = p.be16(2)
        let isResponse = flags & 0x8000 != 0
        if !isResponse {
            if queries.count > maxEntries { queries.removeAll() }
            queries[QueryKey(client: datagram.source, id: id)] = datagram.timestamp
            return
        }
        guard let queried = queries.removeValue(forKey: QueryKey(client: datagram.destination, id: id)) else { return }
        let qd = Int(p.be16(4)), an = Int(p.be16(6))
        var offset = 12
        var name = ""
        for q in 0..<qd {
            guard let (n, next) = Self.readName(p, at: offset), next + 4 <= p.count else { return }
            if q == 0 { name = n }
            offset = next + 4
        }
        let lookup = DNSLookup(name: name.lowercased(), queried: queried, answered: datagram.timestamp)
        for _ in 0..<an {
            guard let (_, next) = Self.readName(p, at: offset), next + 10 <= p.count else { return }
            let type = p.be16(next)
            let length = Int(p.be16(next + 8))
            let data = next + 10
            guard data + length <= p.count else { return }
            var address: IPAddress? = nil
            if type == 1 && length == 4 { address = IPAddress(ipv4: p.be32(data)) }
            if type == 28 && length == 16 { address = IPAddress(high: p.be64(data), low: p.be64(data + 8)) }
            if let address {
                if byAddress.count > maxEntries { byAddress.removeAll() }
                byAddress[address, default: []].append(lookup)
            }
            offset = data + length
        }
    }

    /// The lookup for `host` that answered `address` most recently before `before`.
    public func lookup(host: String, address: IPAddress, before: Timestamp) -> DNSLookup? {
        guard let candidates = byAddress[address] else { return nil }
        var name = host.lowercased()
        if name.hasPrefix("[") { return nil }
        if let colon = name.lastIndex(of: ":") { name = String(name[..<colon]) }
        if name.hasSuffix(".") { name.removeLast() }
        var best: DNSLookup? = nil
        for c in candidates where c.name == name && c.answered <= before && before.seconds(since: c.answered) <= maxLead {
            if best == nil || c.answered > best!.answered { best = c }
        }
        guard let best, used.insert(best.queried.nanoseconds).inserted else { return nil }
        return best
    }

    /// A (possibly compressed) domain name: returns the name and the offset after it.
    static func readName(_ p: UnsafeRawBufferPointer, at start: Int) -> (String, Int)? {
        var labels: [String] = []
        var offset = start
        var end: Int? = nil
        var jumps = 0
        while offset < p.count {
            let length = Int(p.u8(offset))
            if length == 0 { return (labels.joined(separator: "."), end ?? offset + 1) }
            if length & 0xC0 == 0xC0 {
                guard offset + 1 < p.count, jumps < 16 else { return nil }
                if end == nil { end = offset + 2 }
                offset = (length & 0x3F) << 8 | Int(p.u8(offset + 1))
                jumps += 1
                continue
            }
            guard offset + 1 + length <= p.count else { return nil }
            labels.append(String(decoding: UnsafeRawBufferPointer(rebasing: p[(offset + 1)..<(offset + 1 + length)]), as: UTF8.self))
            offset += 1 + length
        }
        return nil
    }
}
