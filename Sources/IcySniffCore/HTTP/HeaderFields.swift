#if canImport(Glibc)
import Glibc
#endif

/// The header (or trailer) section of one message: every field line in order, name case kept,
/// repeats kept, stored as one byte buffer plus a small index (like NIO's HTTPHeaders over a
/// buffer, Zeek's header name ids). Strings are made only when asked for, so a message costs two
/// allocations however many fields it has, and lookups of the fields the analysis reads compare a
/// one-byte id instead of names.
public struct HeaderFields: Sendable, RandomAccessCollection, ExpressibleByArrayLiteral {
    @usableFromInline struct Ref: Sendable {
        var nameStart: UInt32, nameCount: UInt32
        var valueStart: UInt32, valueCount: UInt32
        var id: FieldName
    }

    @usableFromInline var storage: [UInt8] = []
    @usableFromInline var refs: [Ref] = []

    public init() {}

    public init(_ headers: [HTTPHeader]) {
        for h in headers { append(name: Array(h.name.utf8)[...], value: Array(h.value.utf8)[...]) }
    }

    public init(arrayLiteral elements: HTTPHeader...) { self.init(elements) }

    /// Fields that point into a copy of `head` (the message head as received), sized exactly: the
    /// parser's own buffer, with its spare capacity, stays with the parser.
    init(head: UnsafeBufferPointer<UInt8>) {
        storage = Array(head)
        // Room for a field line per 24 bytes of head, 16 at most: a head of a few lines (a
        // flood of minimal requests, each waiting for its response) no longer holds room for 16
        // (320 bytes a message); a longer one still grows once at most in the usual case.
        refs.reserveCapacity(Swift.min(16, Swift.max(2, head.count / 24)))
    }

    /// Adds a field whose name and value are ranges of the storage.
    @inline(__always)
    mutating func appendRange(name: Range<Int>, value: Range<Int>, id: FieldName) {
        refs.append(Ref(nameStart: UInt32(name.lowerBound), nameCount: UInt32(name.count),
                        valueStart: UInt32(value.lowerBound), valueCount: UInt32(value.count), id: id))
    }

    /// Appends one field line (name and value as sent, value already trimmed of whitespace).
    mutating func append(name: ArraySlice<UInt8>, value: ArraySlice<UInt8>) {
        name.withUnsafeBufferPointer { n in value.withUnsafeBufferPointer { v in append(name: n, value: v) } }
    }

    /// Appends one field from bytes elsewhere (an HPACK decoder's output, a parsed line).
    mutating func append(name: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>) {
        let nameStart = storage.count
        storage.append(contentsOf: name)
        let valueStart = storage.count
        storage.append(contentsOf: value)
        refs.append(Ref(nameStart: UInt32(nameStart), nameCount: UInt32(name.count),
                        valueStart: UInt32(valueStart), valueCount: UInt32(value.count),
                        id: FieldName(buffer: name)))
    }

    /// obs-fold: the last field's value continues with `more` (joined by one space).
    mutating func continueLast(with more: ArraySlice<UInt8>) {
        guard var last = refs.popLast(), !more.isEmpty else { return }
        // The value is moved to the end of the storage, so it stays one contiguous range.
        let start = storage.count
        if last.valueCount > 0 {
            let old = Int(last.valueStart)..<Int(last.valueStart + last.valueCount)
            storage.append(contentsOf: storage[old])
            storage.append(0x20)
        }
        storage.append(contentsOf: more)
        last.valueStart = UInt32(start)
        last.valueCount = UInt32(storage.count - start)
        refs.append(last)
    }

    // MARK: Collection of HTTPHeader (strings made on access)

    public var startIndex: Int { 0 }
    public var endIndex: Int { refs.count }
    public subscript(position: Int) -> HTTPHeader {
        HTTPHeader(name: name(at: position), value: value(at: position))
    }

    public func name(at i: Int) -> String {
        let r = refs[i]
        return string(Int(r.nameStart), Int(r.nameCount))
    }

    public func value(at i: Int) -> String {
        let r = refs[i]
        return string(Int(r.valueStart), Int(r.valueCount))
    }

    /// The known-field id of field `i` (`.other` for the rest).
    public func id(at i: Int) -> FieldName { refs[i].id }

    @inline(__always) private func string(_ start: Int, _ count: Int) -> String {
        storage.withUnsafeBufferPointer { String(wireBuffer: UnsafeBufferPointer(rebasing: $0[start..<(start + count)])) }
    }

    /// The value bytes of field `i`, for callers that parse them without making a String.
    @inline(__always)
    public func withValueBytes<R>(at i: Int, _ body: (UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R {
        let r = refs[i]
        return try storage.withUnsafeBufferPointer { try body(Self.slice($0, r.valueStart, r.valueCount)) }
    }

    /// The name bytes of field `i`.
    public func withNameBytes<R>(at i: Int, _ body: (UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R {
        let r = refs[i]
        return try storage.withUnsafeBufferPointer { try body(Self.slice($0, r.nameStart, r.nameCount)) }
    }

    /// The name and value bytes of field `i`.
    @inline(__always)
    public func withNameAndValueBytes<R>(at i: Int, _ body: (UnsafeBufferPointer<UInt8>, UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R {
        let r = refs[i]
        return try storage.withUnsafeBufferPointer {
            try body(Self.slice($0, r.nameStart, r.nameCount), Self.slice($0, r.valueStart, r.valueCount))
        }
    }

    @inline(__always) private static func slice(_ p: UnsafeBufferPointer<UInt8>, _ start: UInt32, _ count: UInt32) -> UnsafeBufferPointer<UInt8> {
        UnsafeBufferPointer(rebasing: p[Int(start)..<Int(start + count)])
    }

    // MARK: Lookup by known id

    @inline(__always) public func index(of id: FieldName) -> Int? {
        for i in refs.indices where refs[i].id == id { return i }
        return nil
    }

    /// How many lines of field `id` there are.
    public func count(of id: FieldName) -> Int {
        var n = 0
        for r in refs where r.id == id { n += 1 }
        return n
    }

    public func first(_ id: FieldName) -> String? { index(of: id).map(value(at:)) }
    public func contains(_ id: FieldName) -> Bool { index(of: id) != nil }
    public func all(_ id: FieldName) -> [String] {
        var out: [String] = []
        for i in refs.indices where refs[i].id == id { out.append(value(at: i)) }
        return out
    }
    /// The field's lines combined into one comma-separated list (RFC 9110 §5.3).
    public func combined(_ id: FieldName) -> String? {
        var result: String? = nil
        for i in refs.indices where refs[i].id == id {
            if result == nil { result = value(at: i) } else { result! += ", " + value(at: i) }
        }
        return result
    }

    /// The first field `id` read as an HTTP-date (nil when absent or not a valid date).
    func httpDate(_ id: FieldName, now: Timestamp?) -> Int64? {
        guard let i = index(of: id) else { return nil }
        return withValueBytes(at: i) { HTTPDate.parse(bytes: $0, now: now) }
    }

    // MARK: Lookup by name (ASCII case-insensitive)

    private func matches(_ i: Int, _ name: String, _ id: FieldName) -> Bool {
        if id != .other { return refs[i].id == id }
        return withUTF8Bytes(of: name) { otherName(at: i, is: $0) }
    }

    /// Whether field `i` is a field without a `FieldName` named `q`, ignoring ASCII case.
    private func otherName(at i: Int, is q: UnsafeBufferPointer<UInt8>) -> Bool {
        let r = refs[i]
        guard r.id == .other, Int(r.nameCount) == q.count else { return false }
        return storage.withUnsafeBufferPointer { s in
            for k in 0..<q.count where lowerASCII(q[k]) != lowerASCII(s[Int(r.nameStart) + k]) { return false }
            return true
        }
    }

    /// The index of the first field named `lower` (a name without a `FieldName`), ignoring
    /// case: `first(_ name:)` without making a String.
    func index(named lower: StaticString) -> Int? {
        let q = UnsafeBufferPointer(start: lower.utf8Start, count: lower.utf8CodeUnitCount)
        for i in refs.indices where otherName(at: i, is: q) { return i }
        return nil
    }

    /// `test` of field `i`'s value: an ASCII value as its bytes (they are its text), any other
    /// through the String it decodes to (`asString`), so a test written twice answers the same.
    @inline(__always)
    func testValue(at i: Int, ascii: (UnsafeBufferPointer<UInt8>) -> Bool, asString: (String) -> Bool) -> Bool {
        if let answer = withValueBytes(at: i, { isASCII($0) ? ascii($0) : nil }) { return answer }
        return asString(value(at: i))
    }

    public func first(_ name: String) -> String? {
        let id = FieldName(name)
        for i in refs.indices where matches(i, name, id) { return value(at: i) }
        return nil
    }

    public func all(_ name: String) -> [String] {
        let id = FieldName(name)
        var out: [String] = []
        for i in refs.indices where matches(i, name, id) { out.append(value(at: i)) }
        return out
    }

    public func combined(_ name: String) -> String? {
        let values = all(name)
        return values.isEmpty ? nil : values.joined(separator: ", ")
    }

    public func contains(_ name: String) -> Bool {
        let id = FieldName(name)
        for i in refs.indices where matches(i, name, id) { return true }
        return false
    }
}

@inline(__always) public func lowerASCII(_ c: UInt8) -> UInt8 { c &- 65 < 26 ? c | 0x20 : c }

/// Optional whitespace (RFC 9110 §5.6.3): space or horizontal tab.
@inline(__always) func isOWS(_ c: UInt8) -> Bool { c == 0x20 || c == 0x09 }

/// `lo..<hi` of `b` without optional whitespace at either end.
@inline(__always) func trimmingOWS(_ b: UnsafeBufferPointer<UInt8>, _ lo: Int, _ hi: Int) -> Range<Int> {
    var lo = lo, hi = hi
    while lo < hi && isOWS(b[lo]) { lo += 1 }
    while hi > lo && isOWS(b[hi - 1]) { hi -= 1 }
    return lo..<hi
}

/// Whether `b` starts with `lower` (lower-case ASCII), ignoring ASCII case.
@inline(__always) func hasPrefixIgnoringCase(_ b: UnsafeBufferPointer<UInt8>, _ lower: StaticString) -> Bool {
    let n = lower.utf8CodeUnitCount
    guard b.count >= n else { return false }
    let l = lower.utf8Start
    for k in 0..<n where lowerASCII(b[k]) != l[k] { return false }
    return true
}

/// Whether `lower` (lower-case ASCII) occurs in `b`, ignoring ASCII case. A plain scan: the
/// standard library's substring search costs microseconds a call, once per transaction.
func containsIgnoringCase(_ b: UnsafeBufferPointer<UInt8>, _ lower: StaticString) -> Bool {
    containsIgnoringCase(b, lowered: UnsafeBufferPointer(start: lower.utf8Start, count: lower.utf8CodeUnitCount))
}

/// Whether `lower` (its ASCII letters lower-case) occurs in `b`, ignoring ASCII case.
public func containsIgnoringCase(_ b: UnsafeBufferPointer<UInt8>, lowered l: UnsafeBufferPointer<UInt8>) -> Bool {
    let n = l.count
    guard n > 0 else { return true }
    guard b.count >= n else { return false }
    for start in 0...(b.count - n) where lowerASCII(b[start]) == l[0] {
        var k = 1
        while k < n && lowerASCII(b[start + k]) == l[k] { k += 1 }
        if k == n { return true }
    }
    return false
}

/// Whether `b` is `lower` (lower-case ASCII), ignoring ASCII case.
@inline(__always) func equalsIgnoringCase(_ b: UnsafeBufferPointer<UInt8>, _ lower: StaticString) -> Bool {
    b.count == lower.utf8CodeUnitCount && hasPrefixIgnoringCase(b, lower)
}

/// Whether `b` is exactly `text`, byte for byte.
@inline(__always) func equalsBytes(_ b: UnsafeBufferPointer<UInt8>, _ text: StaticString) -> Bool {
    b.count == text.utf8CodeUnitCount && (b.count == 0 || memcmp(b.baseAddress!, text.utf8Start, b.count) == 0)
}

/// Whether `b` starts with exactly `text`, byte for byte.
@inline(__always) func hasPrefixBytes(_ b: UnsafeBufferPointer<UInt8>, _ text: StaticString) -> Bool {
    b.count >= text.utf8CodeUnitCount && (text.utf8CodeUnitCount == 0 || memcmp(b.baseAddress!, text.utf8Start, text.utf8CodeUnitCount) == 0)
}

/// Whether every byte is ASCII (then the bytes are the same as the String they decode to).
@inline(__always) func isASCII(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
    for b in bytes where b >= 0x80 { return false }
    return true
}

/// The header fields the analysis and the outputs read, recognised once when a field is parsed.
public enum FieldName: UInt8, Sendable, CaseIterable {
    case other
    case host, userAgent, referer, cookie, authorization, proxyAuthorization, ifNoneMatch, ifModifiedSince
    case expect, upgrade, connection
    case contentLength, transferEncoding, contentEncoding, contentType
    case cacheControl, expires, date, age, lastModified, etag, location, vary, pragma, setCookie
    /// HTTP/2's `:authority` pseudo-header (the Host of an HTTP/2 request).
    case authority
    /// HTTP/2's and HTTP/3's `:status` pseudo-header (the status line of a response).
    case status
    /// The WebSocket subprotocols offered or chosen; clients that cannot send headers from a
    /// browser put bearer tokens there (wstunnel, Kubernetes' `base64url.bearer.authorization.k8s.io.`).
    case secWebSocketProtocol

    /// Fields whose values are credentials: redacted in exports unless `--keep-secrets`.
    public var isSecret: Bool {
        self == .cookie || self == .setCookie || self == .authorization || self == .proxyAuthorization
    }

    /// The names of the API keys and tokens services take in fields of their own (`x-api-key`,
    /// GitLab's `private-token`, AWS's `x-amz-security-token`, …), lower case: their values are
    /// credentials, redacted like Authorization's (README.md, Secrets, lists them).
    public static let credentialNames: Set<String> = [
        "x-api-key", "api-key", "apikey", "x-apikey", "x-api-token", "api-token", "x-auth-token", "auth-token",
        "x-access-token", "access-token", "x-refresh-token", "x-session-token", "x-authorization",
        "private-token", "job-token", "x-amz-security-token", "x-goog-api-key", "ocp-apim-subscription-key",
        "x-functions-key", "x-csrf-token", "x-xsrf-token", "x-vault-token", "x-consul-token", "x-nomad-token",
        "x-rapidapi-key", "x-shopify-access-token",
    ]

    /// Whether a field of another name (`.other`) carries a credential (`credentialNames`):
    /// ruled out by its length or last letter before any comparison.
    public static func isCredential(name: UnsafeBufferPointer<UInt8>) -> Bool {
        guard name.count >= 6 && name.count <= 24, let last = name.last else { return false }
        let l = lowerASCII(last)
        guard l == 0x79 || l == 0x6E else { return false }   // …key, …token, …authorization
        return credentialNames.contains(String(decoding: name, as: UTF8.self).lowercased())
    }

    /// The name as usually written.
    public var canonical: String {
        switch self {
        case .other: return ""
        case .host: return "Host"
        case .userAgent: return "User-Agent"
        case .referer: return "Referer"
        case .cookie: return "Cookie"
        case .authorization: return "Authorization"
        case .proxyAuthorization: return "Proxy-Authorization"
        case .ifNoneMatch: return "If-None-Match"
        case .ifModifiedSince: return "If-Modified-Since"
        case .expect: return "Expect"
        case .upgrade: return "Upgrade"
        case .connection: return "Connection"
        case .contentLength: return "Content-Length"
        case .transferEncoding: return "Transfer-Encoding"
        case .contentEncoding: return "Content-Encoding"
        case .contentType: return "Content-Type"
        case .cacheControl: return "Cache-Control"
        case .expires: return "Expires"
        case .date: return "Date"
        case .age: return "Age"
        case .lastModified: return "Last-Modified"
        case .etag: return "ETag"
        case .location: return "Location"
        case .vary: return "Vary"
        case .pragma: return "Pragma"
        case .setCookie: return "Set-Cookie"
        case .authority: return ":authority"
        case .status: return ":status"
        case .secWebSocketProtocol: return "Sec-WebSocket-Protocol"
        }
    }

    init(_ name: ArraySlice<UInt8>) {
        self = name.withUnsafeBufferPointer { FieldName(buffer: $0) }
    }

    public init(_ name: String) {
        var n = name
        self = n.withUTF8 { FieldName(buffer: $0) }
    }

    /// Recognised by length and first letter, then one comparison (no table, no allocation):
    /// this runs for every header line of every message.
    init(buffer name: UnsafeBufferPointer<UInt8>) {
        guard name.count >= 3 else { self = .other; return }
        let candidate: (lower: StaticString, id: FieldName)
        switch (name.count, lowerASCII(name[0])) {
        case (3, 0x61): candidate = ("age", .age)
        case (4, 0x64): candidate = ("date", .date)
        case (4, 0x65): candidate = ("etag", .etag)
        case (4, 0x68): candidate = ("host", .host)
        case (4, 0x76): candidate = ("vary", .vary)
        case (6, 0x63): candidate = ("cookie", .cookie)
        case (6, 0x65): candidate = ("expect", .expect)
        case (6, 0x70): candidate = ("pragma", .pragma)
        case (7, 0x65): candidate = ("expires", .expires)
        case (7, 0x3A): candidate = (":status", .status)
        case (7, 0x72): candidate = ("referer", .referer)
        case (7, 0x75): candidate = ("upgrade", .upgrade)
        case (8, 0x6C): candidate = ("location", .location)
        case (10, 0x3A): candidate = (":authority", .authority)
        case (10, 0x63): candidate = ("connection", .connection)
        case (10, 0x73): candidate = ("set-cookie", .setCookie)
        case (10, 0x75): candidate = ("user-agent", .userAgent)
        case (12, 0x63): candidate = ("content-type", .contentType)
        case (13, 0x61): candidate = ("authorization", .authorization)
        case (13, 0x63): candidate = ("cache-control", .cacheControl)
        case (13, 0x69): candidate = ("if-none-match", .ifNoneMatch)
        case (13, 0x6C): candidate = ("last-modified", .lastModified)
        case (14, 0x63): candidate = ("content-length", .contentLength)
        case (16, 0x63): candidate = ("content-encoding", .contentEncoding)
        case (17, 0x69): candidate = ("if-modified-since", .ifModifiedSince)
        case (17, 0x74): candidate = ("transfer-encoding", .transferEncoding)
        case (19, 0x70): candidate = ("proxy-authorization", .proxyAuthorization)
        case (22, 0x73): candidate = ("sec-websocket-protocol", .secWebSocketProtocol)
        default: self = .other; return
        }
        self = Self.equalsLowered(name, candidate.lower) ? candidate.id : .other
    }

    /// Whether `name` is `lower` (lower-case ASCII, as long as `name`) ignoring ASCII case,
    /// eight bytes at a time: where `lower` has a letter, the name's byte ORed with 0x20 equals it
    /// only when it is that letter in either case; elsewhere the bytes must be equal. What
    /// `equalsIgnoringCase` answers, in a third of its instructions for the longer names.
    @inline(__always) static func equalsLowered(_ name: UnsafeBufferPointer<UInt8>, _ lower: StaticString) -> Bool {
        let n = name.count
        guard n >= 8, let base = name.baseAddress else { return equalsIgnoringCase(name, lower) }
        let a = UnsafeRawPointer(base), b = UnsafeRawPointer(lower.utf8Start)
        @inline(__always) func wordMatches(at i: Int) -> Bool {
            let x = a.loadUnaligned(fromByteOffset: i, as: UInt64.self)
            let y = b.loadUnaligned(fromByteOffset: i, as: UInt64.self)
            // 0x20 in each byte of y from 0x61 to 0x7A (y is ASCII: no carries between bytes).
            let ones: UInt64 = 0x0101_0101_0101_0101
            let letters = ((y &+ ones &* 0x1F) & ~(y &+ ones &* 0x05) & (ones &* 0x80)) >> 2
            return x | letters == y
        }
        var i = 0
        while i + 8 <= n {
            guard wordMatches(at: i) else { return false }
            i += 8
        }
        // The last bytes: the word that ends with the name (it overlaps the one before).
        return i == n || wordMatches(at: n - 8)
    }
}

extension StringProtocol {
    /// The index of the first `byte` of the UTF-8 text, found with memchr (a Character search
    /// walks grapheme clusters, and the UTF-8 view's generic search is not much faster).
    func firstIndex(ofByte byte: UInt8) -> Index? {
        let offset: Int?
        if let found = utf8.withContiguousStorageIfAvailable({ p -> Int? in
            guard let base = p.baseAddress, let hit = memchr(base, Int32(byte), p.count) else { return nil }
            return UnsafeRawPointer(hit) - UnsafeRawPointer(base)
        }) {
            offset = found
        } else {
            offset = utf8.firstIndex(of: byte).map { utf8.distance(from: utf8.startIndex, to: $0) }
        }
        return offset.map { utf8.index(utf8.startIndex, offsetBy: $0) }
    }
}
