/// Cache-Control directives (RFC 9111 §5.2): a comma-separated list where commas inside a
/// quoted-string do not split; names are case-insensitive; arguments are tokens or quoted-strings.
///
/// Only the directives the freshness model reads are kept, read straight from the header bytes:
/// a response costs no allocation here however many directives it has.
struct CacheControl {
    struct Known: OptionSet {
        let rawValue: UInt8
        static let noCache = Known(rawValue: 1)
        static let noStore = Known(rawValue: 2)
        static let mustRevalidate = Known(rawValue: 4)
        static let isPublic = Known(rawValue: 8)
        static let isPrivate = Known(rawValue: 16)
        static let maxAge = Known(rawValue: 32)
    }

    private(set) var known: Known = []
    /// The first max-age's argument as delta-seconds (nil when absent or not a valid number).
    private(set) var maxAgeSeconds: Int64? = nil

    init() {}

    /// The directives of every Cache-Control line of `headers`. One line is read from its bytes;
    /// several are combined first (a quoted-string may run from one line into the next).
    init(_ headers: HeaderFields) {
        self.init()
        var first: Int? = nil
        for i in headers.indices where headers.id(at: i) == .cacheControl {
            if first != nil { self = CacheControl(headers.combined(.cacheControl)); return }
            first = i
        }
        guard let first else { return }
        headers.withValueBytes(at: first) { parse($0) }
    }

    init(_ value: String?) {
        self.init()
        guard var value else { return }
        value.withUTF8 { parse($0) }
    }

    func has(_ directive: Known) -> Bool { known.contains(directive) }

    private mutating func parse(_ b: UnsafeBufferPointer<UInt8>) {
        var i = 0
        // Elements split at commas outside quoted-strings (RFC 9110 §5.6.1, §5.6.4).
        while i <= b.count {
            var j = i
            var inQuotes = false
            while j < b.count {
                let c = b[j]
                if inQuotes {
                    if c == 0x5C { j += 2; continue }
                    if c == 0x22 { inQuotes = false }
                } else if c == 0x22 {
                    inQuotes = true
                } else if c == 0x2C {
                    break
                }
                j += 1
            }
            let end = min(j, b.count)
            addDirective(UnsafeBufferPointer(rebasing: b[i..<end]))
            i = end + 1
        }
    }

    private mutating func addDirective(_ element: UnsafeBufferPointer<UInt8>) {
        let e = trimmingOWS(element, 0, element.count)
        if e.isEmpty { return }
        var eq = e.lowerBound
        while eq < e.upperBound && element[eq] != 0x3D { eq += 1 }
        let name = trimmingOWS(element, e.lowerBound, eq)
        guard let directive = Self.directive(UnsafeBufferPointer(rebasing: element[name])) else { return }
        if directive == .maxAge && !known.contains(.maxAge) {
            let argument = eq < e.upperBound ? trimmingOWS(element, eq + 1, e.upperBound) : nil
            maxAgeSeconds = argument.flatMap { Self.deltaSeconds(argument: UnsafeBufferPointer(rebasing: element[$0])) }
        }
        known.insert(directive)
    }

    /// Which known directive `name` is (ASCII case-insensitive), nil for the others.
    private static func directive(_ name: UnsafeBufferPointer<UInt8>) -> Known? {
        func equals(_ s: StaticString) -> Bool { equalsIgnoringCase(name, s) }
        switch name.count {
        case 6: return equals("public") ? .isPublic : nil
        case 7: return equals("max-age") ? .maxAge : equals("private") ? .isPrivate : nil
        case 8: return equals("no-cache") ? .noCache : equals("no-store") ? .noStore : nil
        case 15: return equals("must-revalidate") ? .mustRevalidate : nil
        default: return nil
        }
    }

    /// delta-seconds of an argument, a token or a quoted-string (quotes and escapes removed).
    private static func deltaSeconds(argument a: UnsafeBufferPointer<UInt8>) -> Int64? {
        guard a.count >= 2, a[0] == 0x22, a[a.count - 1] == 0x22 else { return deltaSeconds(a) }
        // A quoted number: drop the quotes and the backslash of each quoted-pair.
        return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: a.count) { out in
            var n = 0
            var k = 1
            while k < a.count - 1 {
                if a[k] == 0x5C, k + 1 < a.count - 1 { k += 1 }
                out[n] = a[k]; n += 1
                k += 1
            }
            return deltaSeconds(UnsafeBufferPointer(rebasing: out[0..<n]))
        }
    }

    /// delta-seconds (RFC 9111 §1.2.2): 1*DIGIT, capped at 2^31. nil when invalid.
    static func deltaSeconds(_ b: UnsafeBufferPointer<UInt8>) -> Int64? {
        guard !b.isEmpty else { return nil }
        var v: Int64 = 0
        for c in b {
            guard c >= 0x30 && c <= 0x39 else { return nil }
            if v < 2_147_483_648 { v = min(v * 10 + Int64(c - 0x30), 2_147_483_648) }
        }
        return v
    }

    static func deltaSeconds(_ s: String?) -> Int64? {
        guard var s else { return nil }
        return s.withUTF8 { deltaSeconds($0) }
    }
}
