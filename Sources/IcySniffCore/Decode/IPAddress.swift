#if canImport(Glibc)
import Glibc
#endif

/// An IPv4 or IPv6 address in 16 bytes held as two integers, so it hashes and compares without
/// allocating. IPv4 addresses are stored v4-mapped (::ffff:a.b.c.d).
public struct IPAddress: Hashable, Comparable, Sendable {
    public var high: UInt64
    public var low: UInt64

    @inlinable public init(high: UInt64, low: UInt64) { self.high = high; self.low = low }

    /// From an IPv4 address in host order.
    @inlinable public init(ipv4: UInt32) {
        high = 0
        low = 0x0000_FFFF_0000_0000 | UInt64(ipv4)
    }

    public var isIPv4: Bool { high == 0 && (low >> 32) == 0xFFFF }

    /// From text: a dotted quad or an IPv6 address (nil otherwise).
    public init?(text: String) {
        var v4 = in_addr(), v6 = in6_addr()
        if inet_pton(AF_INET, text, &v4) == 1 {
            self = withUnsafeBytes(of: v4) { IPAddress(ipv4: $0.be32(0)) }
        } else if inet_pton(AF_INET6, text, &v6) == 1 {
            self = withUnsafeBytes(of: v6) { IPAddress(high: $0.be64(0), low: $0.be64(8)) }
        } else {
            return nil
        }
    }

    @inlinable public static func < (a: IPAddress, b: IPAddress) -> Bool {
        a.high != b.high ? a.high < b.high : a.low < b.low
    }

    /// Dotted quad for IPv4, RFC 5952 text for IPv6.
    public var description: String {
        if isIPv4 {
            return String(unsafeUninitializedCapacity: 15) { writeIPv4(to: $0.baseAddress!) }
        }
        var groups = [UInt16]()
        for shift in stride(from: 48, through: 0, by: -16) { groups.append(UInt16(truncatingIfNeeded: high >> UInt64(shift))) }
        for shift in stride(from: 48, through: 0, by: -16) { groups.append(UInt16(truncatingIfNeeded: low >> UInt64(shift))) }
        // Longest run of zero groups (length ≥ 2) becomes "::".
        var bestStart = -1, bestLen = 0, i = 0
        while i < 8 {
            if groups[i] == 0 {
                var j = i
                while j < 8 && groups[j] == 0 { j += 1 }
                if j - i > bestLen && j - i >= 2 { bestStart = i; bestLen = j - i }
                i = j
            } else { i += 1 }
        }
        var out = ""
        i = 0
        while i < 8 {
            if i == bestStart {
                out += "::"
                i += bestLen
                continue
            }
            if !out.isEmpty && !out.hasSuffix(":") { out += ":" }
            out += String(groups[i], radix: 16)
            i += 1
        }
        return out
    }
}

extension IPAddress {
    /// The address as text, appended to `out` (IPv4 without making a String).
    public func appendText(to out: ByteBuffer) {
        if isIPv4 { appendIPv4(to: out) } else { out.append(description) }
    }

    /// At most 15 bytes, written after one capacity check.
    @inline(__always) func appendIPv4(to out: ByteBuffer) {
        out.commit(writeIPv4(to: out.reserve(15)))
    }

    /// The dotted quad at `p` (room for 15 bytes); answers its length.
    @inline(__always) func writeIPv4(to p: UnsafeMutablePointer<UInt8>) -> Int {
        let v = UInt32(truncatingIfNeeded: low)
        var n = 0
        for shift in stride(from: UInt32(24), through: 0, by: -8) {
            let octet = UInt8(truncatingIfNeeded: v >> shift)
            if octet >= 100 { p[n] = 48 + octet / 100; n += 1 }
            if octet >= 10 { p[n] = 48 + (octet / 10) % 10; n += 1 }
            p[n] = 48 + octet % 10; n += 1
            if shift != 0 { p[n] = 0x2E; n += 1 }
        }
        return n
    }
}

/// An address and a port.
public struct Endpoint: Hashable, Comparable, Sendable {
    public var address: IPAddress
    public var port: UInt16

    @inlinable public init(address: IPAddress, port: UInt16) { self.address = address; self.port = port }

    @inlinable public static func < (a: Endpoint, b: Endpoint) -> Bool {
        a.address != b.address ? a.address < b.address : a.port < b.port
    }

    /// `1.2.3.4:80` or `[::1]:80`.
    public var description: String {
        let out = ByteBuffer(capacity: 64)
        appendText(to: out)
        return out.text
    }

    /// `1.2.3.4:80` or `[::1]:80`, appended to a byte buffer.
    public func appendText(to out: ByteBuffer) {
        if address.isIPv4 { address.appendText(to: out) } else {
            out.append(0x5B); address.appendText(to: out); out.append(0x5D)
        }
        out.append(0x3A)
        JSONWriter.appendInteger(Int64(port), to: out)
    }
}

/// Both endpoints of a TCP connection in a canonical order, so A→B and B→A find the same entry.
public struct ConnectionKey: Hashable, Sendable {
    public var lower: Endpoint
    public var upper: Endpoint

    @inlinable public init(_ a: Endpoint, _ b: Endpoint) {
        if a < b { lower = a; upper = b } else { lower = b; upper = a }
    }

    @inlinable public func hash(into hasher: inout Hasher) {
        hasher.combine(lower.address.low ^ (upper.address.low &* 0x9E37_79B9_7F4A_7C15))
        hasher.combine(lower.address.high ^ upper.address.high)
        hasher.combine(UInt32(lower.port) << 16 | UInt32(upper.port))
    }
}
