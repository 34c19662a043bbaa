/// Query strings and forms (application/x-www-form-urlencoded): HAR's queryString and postData
/// params, and the web view's own requests.
public enum Query {
    static func parse(_ target: String) -> [(String, String)] {
        guard let q = target.firstIndex(ofByte: 0x3F) else { return [] }
        var query = target[target.index(after: q)...]
        if let hash = query.firstIndex(ofByte: 0x23) { query = query[..<hash] }
        return parseForm(String(query))
    }

    /// `a=1&b=x+y%21` as its name-value pairs, in order, `+` and percent-escapes decoded.
    public static func parseForm(_ text: String) -> [(String, String)] {
        text.split(separator: "&").map { part in
            let kv = part.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name = percentDecode(String(kv[0]).replacingPlus())
            let value = kv.count > 1 ? percentDecode(String(kv[1]).replacingPlus()) : ""
            return (name, value)
        }
    }

    static func percentDecode(_ s: String) -> String {
        var out: [UInt8] = []
        let b = Array(s.utf8)
        var i = 0
        while i < b.count {
            if b[i] == 0x25, i + 2 < b.count, let h = hex(b[i + 1]), let l = hex(b[i + 2]) {
                out.append(h << 4 | l); i += 3
            } else { out.append(b[i]); i += 1 }
        }
        return String(wireBytes: out)
    }

    private static func hex(_ c: UInt8) -> UInt8? {
        switch c {
        case 0x30...0x39: return c - 0x30
        case 0x41...0x46: return c - 0x37
        case 0x61...0x66: return c - 0x57
        default: return nil
        }
    }
}

extension String {
    func replacingPlus() -> String { String(map { $0 == "+" ? " " : $0 }) }
}
