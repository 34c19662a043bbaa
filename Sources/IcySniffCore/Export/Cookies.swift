enum Cookies {
    /// The cookie-pairs of a request Cookie value, as `parseRequest` splits them (parts between
    /// `;`, trimmed of spaces and tabs, empty ones skipped, the name up to the first `=`), as
    /// slices of `v` (ASCII).
    @inline(__always)
    static func forEachRequestCookie(_ v: UnsafeBufferPointer<UInt8>,
                                     _ body: (UnsafeBufferPointer<UInt8>, UnsafeBufferPointer<UInt8>) -> Void) {
        let n = v.count
        var i = 0
        while i <= n {
            var end = i
            while end < n && v[end] != 0x3B { end += 1 }
            let cookie = trimmingOWS(v, i, end)
            let s = cookie.lowerBound, e = cookie.upperBound
            if s < e {
                var eq = s
                while eq < e && v[eq] != 0x3D { eq += 1 }
                let valueStart = eq < e ? eq + 1 : e
                body(UnsafeBufferPointer(rebasing: v[s..<eq]), UnsafeBufferPointer(rebasing: v[valueStart..<e]))
            }
            i = end + 1
        }
    }

    static func parseRequest(_ value: String) -> [(name: String, value: String)] {
        value.split(separator: ";").compactMap { part in
            let p = part.trimmingASCIIWhitespace()
            guard !p.isEmpty else { return nil }
            let kv = p.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            return (String(kv[0]), kv.count > 1 ? String(kv[1]) : "")
        }
    }

    struct SetCookie { var name = ""; var value = ""; var path: String?; var domain: String?; var httpOnly = false; var secure = false }

    static func parseSetCookie(_ header: String) -> SetCookie {
        var c = SetCookie()
        let parts = header.split(separator: ";", omittingEmptySubsequences: false)
        if let first = parts.first {
            let kv = first.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            c.name = kv[0].trimmingASCIIWhitespace()
            c.value = kv.count > 1 ? kv[1].trimmingASCIIWhitespace() : ""
        }
        for attr in parts.dropFirst() {
            let kv = attr.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let key = kv[0].trimmingASCIIWhitespace().lowercased()
            let val = kv.count > 1 ? kv[1].trimmingASCIIWhitespace() : ""
            switch key {
            case "path": c.path = val
            case "domain": c.domain = val
            case "httponly": c.httpOnly = true
            case "secure": c.secure = true
            default: break
            }
        }
        return c
    }
}
