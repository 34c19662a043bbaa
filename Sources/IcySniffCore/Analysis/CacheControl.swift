/// Cache-Control directives (RFC 9111 §5.2): a comma-separated list where commas inside a
/// quoted-string do not split; names are case-insensitive; arguments are tokens or quoted-strings.
struct CacheControl {
    /// Directives in order: (lower-cased name, argument without quotes).
    var directives: [(name: String, argument: String?)] = []

    init(_ value: String?) {
        guard let value else { return }
        let b = Array(value.utf8)
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
            addDirective(b[i..<end])
            i = end + 1
        }
    }

    private mutating func addDirective(_ element: ArraySlice<UInt8>) {
        var e = element
        while let f = e.first, f == 0x20 || f == 0x09 { e = e.dropFirst() }
        while let l = e.last, l == 0x20 || l == 0x09 { e = e.dropLast() }
        if e.isEmpty { return }
        guard let eq = e.firstIndex(of: 0x3D) else {
            directives.append((String(decoding: e.map(lowerASCII), as: UTF8.self), nil))
            return
        }
        var name = e[e.startIndex..<eq]
        while let l = name.last, l == 0x20 || l == 0x09 { name = name.dropLast() }
        var arg = e[(eq + 1)...]
        while let f = arg.first, f == 0x20 || f == 0x09 { arg = arg.dropFirst() }
        var argument: [UInt8]
        if arg.count >= 2, arg.first == 0x22, arg.last == 0x22 {
            argument = []
            var k = arg.startIndex + 1
            while k < arg.endIndex - 1 {
                if arg[k] == 0x5C, k + 1 < arg.endIndex - 1 { k += 1 }
                argument.append(arg[k])
                k += 1
            }
        } else {
            argument = Array(arg)
        }
        directives.append((String(decoding: name.map(lowerASCII), as: UTF8.self),
                           String(wireBytes: argument)))
    }

    func has(_ name: String) -> Bool { directives.contains { $0.name == name } }

    /// The first occurrence's argument (`nil` when absent; `.some(nil)` when present without one).
    func argument(_ name: String) -> String?? {
        for d in directives where d.name == name { return .some(d.argument) }
        return nil
    }

    /// delta-seconds (RFC 9111 §1.2.2): 1*DIGIT, capped at 2^31. nil when invalid.
    static func deltaSeconds(_ s: String?) -> Int64? {
        guard let s, !s.isEmpty, s.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
        var v: Int64 = 0
        for b in s.utf8 {
            v = v * 10 + Int64(b - 0x30)
            if v > 2_147_483_648 { return 2_147_483_648 }
        }
        return v
    }
}
