/// RFC 9112 §3: `method SP request-target SP HTTP-version`. Lenient: several spaces, a missing
/// version (HTTP/0.9, §C.1 of RFC 9112's history), an unknown version; each deviation is flagged.
/// Request methods HTTP defines.
enum HTTPMethods {
    /// RFC 9110's methods, PATCH (RFC 5789) and WebDAV's (RFC 4918, 3253, 5323).
    static let known: Set<String> = ["GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH",
                                     "PROPFIND", "PROPPATCH", "MKCOL", "COPY", "MOVE", "LOCK", "UNLOCK", "SEARCH",
                                     "REPORT", "MKACTIVITY", "CHECKOUT", "MERGE", "MKCALENDAR", "ACL"]
}

/// What other protocols' servers say first.
enum OtherProtocols {
    /// A reply line of a line protocol: a three-digit code (SMTP, FTP, NNTP), `+OK`/`-ERR`
    /// (POP3), `* ` (IMAP), `NAME/d.d` that is not HTTP (SIP, RTSP, Gnutella), an SSH banner
    /// (`SSH-2.0-…`), or bytes that are no text at all (a TLS alert, a binary protocol).
    static func looksLikeReply(_ bytes: ArraySlice<UInt8>) -> Bool {
        let bytes = Array(bytes.prefix(64))
        func isDigit(_ b: UInt8) -> Bool { b >= 0x30 && b <= 0x39 }
        if bytes.count >= 4, isDigit(bytes[0]), isDigit(bytes[1]), isDigit(bytes[2]), bytes[3] == 0x20 || bytes[3] == 0x2D { return true }
        for prefix in ["+OK", "-ERR", "* ", "SSH-"] where bytes.starts(with: Array(prefix.utf8)) { return true }
        if let slash = bytes.prefix(16).firstIndex(of: 0x2F), slash > 0, bytes[0..<slash].allSatisfy({ $0 >= 0x41 && $0 <= 0x5A }),
           bytes.count > slash + 3, isDigit(bytes[slash + 1]), bytes[slash + 2] == 0x2E {
            return bytes[0..<slash] != Array("HTTP".utf8)[...]
        }
        return bytes.contains { $0 < 0x09 || ($0 > 0x0D && $0 < 0x20) || $0 == 0x7F }
    }
}

struct RequestLine {
    var method: String
    var target: [UInt8]
    var version: String
    var malformed = false
    /// Raw spaces or tabs inside the target (kept in it): RFC 9112 §3.2 allows none.
    var spaceInTarget = false

    init?(_ line: ArraySlice<UInt8>) {
        guard let parsed = line.withUnsafeBufferPointer({ RequestLine(bytes: $0) }) else { return nil }
        self = parsed
    }

    /// Read in place: as slices of an array, the scans and copies of a start line cost 1,170
    /// instructions a request.
    private init?(bytes p: UnsafeBufferPointer<UInt8>) {
        @inline(__always) func isSpace(_ b: UInt8) -> Bool { b == 0x20 || b == 0x09 }
        @inline(__always) func part(_ lo: Int, _ hi: Int) -> UnsafeBufferPointer<UInt8> { UnsafeBufferPointer(rebasing: p[lo..<hi]) }
        var sp = 0
        while sp < p.count && !isSpace(p[sp]) { sp += 1 }
        guard sp < p.count, sp > 0 else { return nil }
        let methodBytes = part(0, sp)
        for b in methodBytes where !isTokenChar(b) { return nil }
        var lo = sp, hi = p.count
        while lo < hi && isSpace(p[lo]) { lo += 1 }
        while hi > lo && isSpace(p[hi - 1]) { hi -= 1 }
        let rest = part(lo, hi)
        method = StartLineText.common(methodBytes) ?? String(decoding: methodBytes, as: UTF8.self)
        var lastSpace = hi - 1
        while lastSpace >= lo && !isSpace(p[lastSpace]) { lastSpace -= 1 }
        if lastSpace >= lo {
            let versionBytes = part(lastSpace + 1, hi)
            var targetEnd = lastSpace
            while targetEnd > lo && isSpace(p[targetEnd - 1]) { targetEnd -= 1 }
            let targetPart = part(lo, targetEnd)
            if RequestLine.isVersion(versionBytes) {
                target = Array(targetPart)
                spaceInTarget = targetPart.contains { isSpace($0) }
                version = StartLineText.common(versionBytes) ?? String(decoding: versionBytes, as: UTF8.self)
            } else if hasPrefixIgnoringCase(versionBytes, "http") {
                // "HTTP", "HTTP/1", "HTTP/x.y": a version in the wrong form.
                target = Array(targetPart)
                version = String(decoding: versionBytes, as: UTF8.self)
                malformed = true
            } else {
                // Spaces inside the target, no version: keep it all as the target (HTTP/0.9 form).
                target = Array(rest)
                version = ""
                malformed = true
            }
        } else if RequestLine.isVersion(rest) {
            // "OPTIONS HTTP/1.1": the target is missing.
            target = []
            version = String(decoding: rest, as: UTF8.self)
            malformed = true
        } else {
            target = Array(rest)
            version = ""
        }
        if rest.isEmpty { target = []; malformed = true }
        // HTTP/0.9 knows only GET; any other method without a version is a broken request line.
        if version.isEmpty && method != "GET" { malformed = true }
    }

    static func isVersion(_ v: UnsafeBufferPointer<UInt8>) -> Bool {
        guard v.count == 8 else { return false }
        return (v[0] | 0x20) == 0x68 && (v[1] | 0x20) == 0x74 && (v[2] | 0x20) == 0x74 && (v[3] | 0x20) == 0x70
            && v[4] == 0x2F && isDigit(v[5]) && v[6] == 0x2E && isDigit(v[7])
    }

    /// A strict check used when resynchronising: `TOKEN SP target SP HTTP/d.d`.
    static func isPlausible(_ line: ArraySlice<UInt8>) -> Bool {
        guard let parsed = RequestLine(line) else { return false }
        return !parsed.version.isEmpty && !parsed.malformed
    }
}

/// RFC 9112 §4: `HTTP-version SP status-code SP [reason-phrase]`; the version matched
/// case-insensitively and the reason phrase optional.
struct StatusLine {
    var version: String
    var status: Int
    var reason: String

    init?(_ line: ArraySlice<UInt8>) {
        let b = line
        guard b.count >= 12 || (b.count >= 10) else { return nil }
        let s = b.startIndex
        guard (b[s] | 0x20) == 0x68, (b[s + 1] | 0x20) == 0x74, (b[s + 2] | 0x20) == 0x74, (b[s + 3] | 0x20) == 0x70,
              b[s + 4] == 0x2F else { return nil }
        guard let sp = b[s...].firstIndex(where: { $0 == 0x20 || $0 == 0x09 }) else { return nil }
        version = StartLineText.common(b[s..<sp]) ?? String(decoding: b[s..<sp], as: UTF8.self)
        var i = sp
        while i < b.endIndex && (b[i] == 0x20 || b[i] == 0x09) { i += 1 }
        guard i + 3 <= b.endIndex, isDigit(b[i]), isDigit(b[i + 1]), isDigit(b[i + 2]) else { return nil }
        status = Int(b[i] - 48) * 100 + Int(b[i + 1] - 48) * 10 + Int(b[i + 2] - 48)
        i += 3
        if i < b.endIndex && !(b[i] == 0x20 || b[i] == 0x09) { return nil }
        while i < b.endIndex && (b[i] == 0x20 || b[i] == 0x09) { i += 1 }
        reason = StartLineText.common(b[i...]) ?? String(wireBytes: b[i...])
    }
}

/// The texts start lines repeat — methods, versions, the usual reason phrases — as literals: a
/// String made from bytes validates them every time, one made from a literal costs nothing.
enum StartLineText {
    static func common(_ b: ArraySlice<UInt8>) -> String? {
        b.withUnsafeBufferPointer { common($0) }
    }

    static func common(_ p: UnsafeBufferPointer<UInt8>) -> String? {
        @inline(__always) func isText(_ s: StaticString) -> Bool { equalsBytes(p, s) }
        switch p.count {
        case 2: if isText("OK") { return "OK" }
        case 3: if isText("GET") { return "GET" }; if isText("PUT") { return "PUT" }
        case 4: if isText("POST") { return "POST" }; if isText("HEAD") { return "HEAD" }
        case 5: if isText("Found") { return "Found" }
        case 6: if isText("DELETE") { return "DELETE" }
        case 7: if isText("OPTIONS") { return "OPTIONS" }; if isText("Created") { return "Created" }
        case 8: if isText("HTTP/1.1") { return "HTTP/1.1" }; if isText("HTTP/1.0") { return "HTTP/1.0" }
        case 9: if isText("Not Found") { return "Not Found" }
        case 10: if isText("No Content") { return "No Content" }
        case 12: if isText("Not Modified") { return "Not Modified" }
        case 15: if isText("Partial Content") { return "Partial Content" }
        case 17: if isText("Moved Permanently") { return "Moved Permanently" }
        default: break
        }
        return nil
    }
}

@inline(__always) func isDigit(_ c: UInt8) -> Bool { c >= 0x30 && c <= 0x39 }

/// tchar (RFC 9110 §5.6.2).
@inline(__always) func isTokenChar(_ c: UInt8) -> Bool {
    switch c {
    case 0x30...0x39, 0x41...0x5A, 0x61...0x7A: return true
    case UInt8(ascii: "!"), UInt8(ascii: "#"), UInt8(ascii: "$"), UInt8(ascii: "%"), UInt8(ascii: "&"),
         UInt8(ascii: "'"), UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."),
         UInt8(ascii: "^"), UInt8(ascii: "_"), UInt8(ascii: "`"), UInt8(ascii: "|"), UInt8(ascii: "~"):
        return true
    default: return false
    }
}
