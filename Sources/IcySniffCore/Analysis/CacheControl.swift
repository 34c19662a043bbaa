/// Cache-Control directives (RFC 9111 §5.2): a comma-separated list where commas inside a
/// quoted-string do not split; names are case-insensitive; arguments are tokens or quoted-strings.
struct CacheControl {
    /// Directives in order: (lower-cased name, argument without quotes).
    var directives: [(name: String, argument: String?)] = []

    init(_ value: String?) {
        guard let value else { return }
        var current: [Character] = []
        var inQuotes = false
        var escaped = false
        var elements: [String] = []
        for ch in value {
            if inQuotes {
                current.append(ch)
                if escaped { escaped = false } else if ch == "\\" { escaped = true } else if ch == "\"" { inQuotes = false }
                continue
            }
            if ch == "\"" { inQuotes = true; current.append(ch); continue }
            if ch == "," { elements.append(String(current)); current = []; continue }
            current.append(ch)
        }
        elements.append(String(current))
        for element in elements {
            let e = element.trimmingCharacters(in: " \t")
            if e.isEmpty { continue }
            let kv = e.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            if kv.count == 2 {
                let name = String(kv[0]).trimmingCharacters(in: " \t").lowercased()
                var arg = String(kv[1]).trimmingCharacters(in: " \t")
                if arg.hasPrefix("\"") && arg.hasSuffix("\"") && arg.count >= 2 {
                    arg = String(arg.dropFirst().dropLast())
                    var unescaped = ""
                    var esc = false
                    for c in arg { if esc { unescaped.append(c); esc = false } else if c == "\\" { esc = true } else { unescaped.append(c) } }
                    arg = unescaped
                }
                directives.append((name, arg))
            } else {
                directives.append((e.lowercased(), nil))
            }
        }
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
