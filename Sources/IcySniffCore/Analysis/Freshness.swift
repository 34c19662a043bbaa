/// Where a response's freshness lifetime came from (RFC 9111 §4.2.1); the raw value is what the
/// outputs write.
public enum LifetimeSource: String, Sendable {
    case maxAge = "max-age"
    case expires
    /// 10% of Date − Last-Modified (§4.2.2).
    case heuristic
    case none
}

/// How a private cache following RFC 9111 sees one response (the `_cache` contract of
/// docs/CACHE.md and ../shared/corpus/cache/README.md).
///
/// Plain values only, no strings: a transaction's assessment is copied as bytes. The response's
/// validators (`_cache.etag`, `lastModified`) are its own ETag and Last-Modified fields, read
/// from it where they are written (`EntryEncoder.writeCacheCustom`). As two Strings here they
/// were made for every response (NDJSON never writes them) and made each copy and destruction
/// of the struct go through its value witnesses: ~2,000 instructions a transaction.
public struct CacheAssessment: Sendable {
    public var storable = false
    public var freshnessLifetime: Double? = nil
    public var lifetimeSource = LifetimeSource.none
    public var age: Double = 0
    public var freshFor: Double? = nil
    public var mustRevalidate = false
    public var conditional = false
    public var notModified = false
    public var avoidable = false
    /// The earlier transaction whose stored response could have answered this request.
    public var avoidableBecauseOf: UInt64? = nil
    /// response_time + freshFor, for storable responses (HAR cache.afterRequest.expires).
    public var expires: Timestamp? = nil
    public var responseTime: Timestamp = .zero
    public internal(set) var noCache = false
    public internal(set) var noStore = false
    /// The model had evicted (least recently used out, `CacheTracker.maxURLs`) a stored response
    /// for this URL that might still have been fresh: "not avoidable" may be wrong here.
    public internal(set) var dependsOnEvictedEntry = false

    /// A short label for tables: `fresh 8d6h`, `heuristic 2h24m`, `stale`, `no-store`, `304`, `AVOIDABLE`:
    /// the verdict, with how long it stays fresh for the fresh ones.
    public var label: String { withLabelUTF8 { String(decoding: $0, as: UTF8.self) } }

    /// `label`'s bytes, written on the stack: NDJSON writes one a line, where the String (made
    /// through interpolation, on the heap past 15 bytes: "heuristic 23h59m") cost ~330
    /// instructions.
    func withLabelUTF8<R>(_ body: (UnsafeBufferPointer<UInt8>) -> R) -> R {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 48) { out in
            let (text, fresh) = verdictText
            let shown: StaticString = avoidable ? "AVOIDABLE" : text
            var n = URLText.copy(UnsafeBufferPointer(start: shown.utf8Start, count: shown.utf8CodeUnitCount), to: out, at: 0)
            if fresh {
                out[n] = 0x20
                n += 1
                n += Self.writeShortDuration(freshFor ?? 0, to: UnsafeMutableBufferPointer(rebasing: out[n...]))
            }
            return body(UnsafeBufferPointer(rebasing: out[0..<n]))
        }
    }

    /// The kind of verdict, without durations (what a comparison and the HAR's `_cache.verdict`
    /// hold): "avoidable", "304", "no-store", "not-storable", "-", "no-cache", "stale",
    /// "heuristic" or "fresh". `label` adds the durations.
    public var verdict: String { verdictText.text.description }

    /// The one place that decides the verdict: its text, and whether it is a fresh one (whose
    /// label says for how long).
    var verdictText: (text: StaticString, fresh: Bool) {
        if avoidable { return ("avoidable", false) }
        if notModified { return ("304", false) }
        if !storable { return (noStore ? "no-store" : "not-storable", false) }
        guard let freshFor else { return ("-", false) }
        if noCache { return ("no-cache", false) }
        if freshFor <= 0 { return ("stale", false) }
        return (lifetimeSource == .heuristic ? "heuristic" : "fresh", true)
    }

    /// The verdict's kind of a `label` (as the tables and NDJSON's `cache` field show it): what
    /// `icy-sniff diff` reads back from an NDJSON file.
    public static func verdict(ofLabel label: String) -> String {
        if label == "AVOIDABLE" { return "avoidable" }
        return String(label.split(separator: " ").first ?? "-")
    }

    static func shortDuration(_ seconds: Double) -> String {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 32) { out in
            String(decoding: UnsafeBufferPointer(rebasing: out[0..<writeShortDuration(seconds, to: out)]), as: UTF8.self)
        }
    }

    /// `shortDuration`'s text written at the start of `out` (at least 32 bytes: "∞", or two
    /// units of at most 11 digits each, `JSONWriter.writeDigits`); answers its length. The two largest units that are
    /// not zero, the second left out when it is zero: "8d6h", "3d", "2h24m", "59s".
    static func writeShortDuration(_ seconds: Double, to out: UnsafeMutableBufferPointer<UInt8>) -> Int {
        guard seconds.isFinite, seconds < 1e15 else {
            for (i, b) in "∞".utf8.enumerated() { out[i] = b }
            return 3
        }
        var s = Int64(max(0, seconds).rounded(.down))
        let d = s / 86_400; s %= 86_400
        let h = s / 3600; s %= 3600
        let m = s / 60; s %= 60
        let (first, firstUnit, second, secondUnit): (Int64, UInt8, Int64, UInt8) =
            d > 0 ? (d, UInt8(ascii: "d"), h, UInt8(ascii: "h"))
            : h > 0 ? (h, UInt8(ascii: "h"), m, UInt8(ascii: "m"))
            : m > 0 ? (m, UInt8(ascii: "m"), s, UInt8(ascii: "s"))
            : (s, UInt8(ascii: "s"), 0, 0)
        var n = 0
        func put(_ value: Int64, _ unit: UInt8) {
            n += JSONWriter.writeDigits(UInt64(value), at: out.baseAddress! + n)
            out[n] = unit
            n += 1
        }
        put(first, firstUnit)
        if second > 0 { put(second, secondUnit) }
        return n
    }
}

/// Computes `CacheAssessment`s (RFC 9111 §3, §4.2) and, across the transactions of a run taken in
/// request order, which requests a private cache would have answered without the network (§4).
/// The private cache of one client population, as RFC 9111 describes it, fed with every
/// transaction in completion order (`CacheJudgingSink`).
///
/// Bounded as a real cache is: at most `maxURLs` URLs, least recently used out; per URL, one
/// stored response per variant (a newer one replaces it, RFC 9111 §4), the last
/// `responsesPerVariant` of them kept so that concurrent requests are judged against the response
/// that was stored when they were sent, and at most `variantsPerURL` variants. Every step is O(1)
/// whatever the capture: a polling client fetching one URL a million times costs what a million
/// different URLs cost. An evicted URL's freshness is remembered in a small table of hashes, so a
/// verdict that depended on it says so (`dependsOnEvictedEntry`).
public final class CacheTracker {
    private struct Stored {
        var sequence: UInt64
        var responseTime: Timestamp
        var freshFor: Double
        var vary: [String]
        var varyValues: [String?]
        /// When it stops being fresh (capture time).
        var freshUntil: Timestamp { responseTime.adding(seconds: freshFor) }
    }
    public static let maxURLs = 32_768
    static let responsesPerVariant = 4
    static let variantsPerURL = 8
    /// Stored responses per URL, newest last.
    private var stored: BoundedLRU<TextKey, [Stored]>
    /// An evicted URL (its `TextKey`'s hash) → the latest time one of its stored responses was
    /// still fresh.
    private var evicted: BoundedLRU<Int, Timestamp>

    /// URLs pushed out of the model because it was full.
    public var evictions: UInt64 { stored.evictions }

    public convenience init() { self.init(maxURLs: CacheTracker.maxURLs) }

    /// `maxURLs`: the URLs kept at once (tests make it small).
    init(maxURLs: Int) {
        stored = BoundedLRU(capacity: maxURLs)
        evicted = BoundedLRU(capacity: 4 * maxURLs)
    }

    /// Status codes heuristically cacheable (RFC 9110 §15.1).
    static func heuristicallyCacheable(_ status: Int) -> Bool {
        switch status {
        case 200, 203, 204, 206, 300, 301, 308, 404, 405, 410, 414, 501: return true
        default: return false
        }
    }

    /// Assesses `t` and records it for later requests. Call in order of request start.
    @discardableResult
    public func assess(_ t: Transaction) -> CacheAssessment? {
        judge(t)
        return t.cache
    }

    /// `assess` without handing the assessment back: it goes to `t.cache` only (a copy of it
    /// returned and dropped cost a copy and a destruction of the whole struct per transaction).
    func judge(_ t: Transaction) {
        guard let response = t.response, !response.isHTTP09 || response.status != 0 else { return }
        var a = Self.assessResponse(t)
        let request = t.request
        let requestTime = request?.arrival.firstByte ?? response.arrival.firstByte
        // Only GETs are looked up and stored (§4: a GET is what a stored response can answer).
        if request?.method == "GET" { lookUpAndStore(t, response: response, requestTime: requestTime, &a) }
        t.cache = a
    }

    /// §4: an earlier stored, fresh, matching response makes this GET avoidable; a storable,
    /// fresh response is stored for the requests after it.
    private func lookUpAndStore(_ t: Transaction, response: HTTPMessage, requestTime: Timestamp, _ a: inout CacheAssessment) {
        let request = t.request
        let url = cacheKey(t)
        var entry: Stored? = nil
        if a.storable, !a.noCache, let freshFor = a.freshFor {
            let vary = (response.headers.combined(.vary) ?? "").split(separator: ",")
                .map { $0.trimmingASCIIWhitespace().lowercased() }.filter { !$0.isEmpty }
            let values = vary.map { request?.headers.combined($0) }
            entry = Stored(sequence: t.sequence, responseTime: a.responseTime, freshFor: freshFor, vary: vary, varyValues: values)
        }
        var missedEvicted = false
        // One look-up: read the stored responses, then store this one in place.
        let out = stored.update(url) { list in
            if let candidates = list {
                for s in candidates.reversed() where s.responseTime <= requestTime {
                    guard !s.vary.contains("*") else { continue }
                    let matches = zip(s.vary, s.varyValues).allSatisfy { name, value in request?.headers.combined(name) == value }
                    guard matches else { continue }
                    if s.freshFor - requestTime.seconds(since: s.responseTime) > 0 {
                        a.avoidable = true
                        a.avoidableBecauseOf = s.sequence
                        break
                    }
                }
            } else {
                missedEvicted = true
            }
            if let entry {
                if list == nil { list = [entry] } else { Self.store(entry, in: &list!) }
            }
        }
        if missedEvicted, let freshUntil = evicted.peek(url.hash), requestTime < freshUntil {
            a.dependsOnEvictedEntry = true
        }
        if let out, let latest = out.value.map(\.freshUntil).max() {
            // Remember until when the evicted URL had a fresh response.
            let h = out.key.hash
            if latest > (evicted.peek(h) ?? .zero) { evicted.set(h, latest) }
        }
    }

    /// A newer response of the same variant replaces the older ones, of which the last few are
    /// kept for requests sent before it arrived; the oldest variant goes when there are too many.
    private static func store(_ entry: Stored, in list: inout [Stored]) {
        var sameVariant = 0
        for s in list where s.vary == entry.vary && s.varyValues == entry.varyValues { sameVariant += 1 }
        if sameVariant >= responsesPerVariant,
           let oldest = list.firstIndex(where: { $0.vary == entry.vary && $0.varyValues == entry.varyValues }) {
            list.remove(at: oldest)
        }
        list.append(entry)
        if list.count > responsesPerVariant * variantsPerURL { list.removeFirst() }
    }

    /// The client whose private cache a transaction's response goes to, as text (the one place
    /// that says what a client is; the report's per-client tables use it too).
    ///
    /// A private cache belongs to one user agent (RFC 9111 §1): on a hotspot, phone B's first
    /// download of a file is not avoidable because phone A fetched it. A client is the address
    /// the requests come from (its device, where the capture names one: `DeviceTable`) and the
    /// User-Agent they carry: two apps (or a browser and an app)
    /// behind one address, or behind a NAT, have caches of their own.
    public static func client(of t: Transaction) -> String {
        let text = ByteBuffer(capacity: 96)
        appendClient(of: t, to: text)
        return text.text
    }

    /// `client(of:)` appended to `key` (the device's link-layer address where known, so that a
    /// phone's IPv4 and IPv6 requests share one cache, else the client address; a NUL; the
    /// User-Agent's bytes), without making a String.
    static func appendClient(of t: Transaction, to key: ByteBuffer) {
        if let device = t.connection.device {
            device.appendText(to: key)
        } else {
            t.connection.client.address.appendText(to: key)
        }
        key.append(0)
        if let headers = t.request?.headers, let i = headers.index(of: .userAgent) {
            headers.withValueBytes(at: i) { key.append($0) }
        }
    }

    /// What a stored response is found by: its client (`client(of:)`), then the URL (scheme,
    /// host lower-cased, default port dropped, path and query). Assembled in a reused buffer
    /// and hashed as bytes: no String is made (making one and hashing it were 850 instructions
    /// a GET), and two keys are the same only when their bytes are.
    func cacheKey(_ t: Transaction) -> TextKey {
        let key = keyScratch
        key.removeAll()
        Self.appendClient(of: t, to: key)
        key.append(0)
        /// Bytes appended whole, then lower-cased in place.
        func appendLowered(_ b: UnsafeBufferPointer<UInt8>) {
            let start = key.count
            key.append(b)
            for i in start..<key.count { key.base[i] = lowerASCII(key.base[i]) }
        }
        func build(_ tb: UnsafeBufferPointer<UInt8>) -> TextKey {
            if hasPrefixIgnoringCase(tb, "http://") || hasPrefixIgnoringCase(tb, "https://") {
                appendLowered(tb)
            } else {
                // The scheme of the session that carried it (https inside TLS), and the host
                // without the scheme's default port.
                key.append(t.scheme)
                key.append("://")
                var host = t.host
                let defaultPort: StaticString = t.defaultPort == 443 ? ":443" : ":80"
                host.withUTF8 { hb in
                    var n = hb.count
                    let p = defaultPort.utf8CodeUnitCount
                    if n > p, equalsBytes(UnsafeBufferPointer(rebasing: hb[(n - p)...]), defaultPort) { n -= p }
                    appendLowered(UnsafeBufferPointer(rebasing: hb[0..<n]))
                }
                key.append(tb)
            }
            return TextKey(bytes: UnsafeRawBufferPointer(start: key.base, count: key.count))
        }
        // The target's text (`withTargetUTF8`), so two different byte strings never meet in one key
        // (a target that is not UTF-8 meets only its own percent-encoded spelling: the same URL).
        guard let request = t.request else {
            let slash: StaticString = "/"
            return build(UnsafeBufferPointer(start: slash.utf8Start, count: 1))
        }
        return request.withTargetUTF8 { build($0) }
    }
    private let keyScratch = ByteBuffer(capacity: 256)

    /// The per-response part: storable, lifetime, age, validators (no history needed).
    static func assessResponse(_ t: Transaction) -> CacheAssessment {
        var a = CacheAssessment()
        guard let response = t.response else { return a }
        let request = t.request
        let headers = response.headers
        let cc = CacheControl(headers)
        let method = request?.method ?? ""
        let status = response.status
        let responseTime = response.arrival.firstByte
        let requestTime = request?.arrival.firstByte ?? responseTime
        a.responseTime = responseTime

        let dateValue: Double = {
            if let secs = headers.httpDate(.date, now: responseTime) { return Double(secs) }
            return responseTime.secondsSinceEpoch
        }()
        let ageValue = Double(headers.index(of: .age).flatMap { headers.withValueBytes(at: $0) { CacheControl.deltaSeconds($0) } } ?? 0)

        // §4.2.3: age = max(apparent_age, corrected_age_value).
        let apparent = max(0, responseTime.secondsSinceEpoch - dateValue)
        let delay = responseTime.seconds(since: requestTime)
        a.age = max(apparent, ageValue + delay)

        a.mustRevalidate = cc.has(.noCache) || cc.has(.mustRevalidate)
        a.noCache = cc.has(.noCache)
        a.noStore = cc.has(.noStore)
        a.conditional = request.map { $0.headers.contains(.ifNoneMatch) || $0.headers.contains(.ifModifiedSince) } ?? false
        a.notModified = status == 304

        // §3: storable by a private cache.
        let hasMaxAge = cc.has(.maxAge)
        let hasExpires = headers.contains(.expires)
        let explicit = hasMaxAge || hasExpires || cc.has(.isPublic) || cc.has(.isPrivate)
        a.storable = (method == "GET" || method == "HEAD") && !cc.has(.noStore)
            && (heuristicallyCacheable(status) || explicit)
        guard a.storable else {
            a.freshnessLifetime = nil
            a.lifetimeSource = .none
            return a
        }
        // §4.2.1: max-age, then Expires, then heuristics.
        var lifetime: Double = 0
        if hasMaxAge {
            lifetime = Double(cc.maxAgeSeconds ?? 0)
            a.lifetimeSource = .maxAge
        } else if hasExpires {
            if let expires = headers.httpDate(.expires, now: responseTime) {
                lifetime = max(0, Double(expires) - dateValue)
            }
            a.lifetimeSource = .expires
        } else if heuristicallyCacheable(status) || cc.has(.isPublic) || cc.has(.isPrivate),
                  let modified = headers.httpDate(.lastModified, now: responseTime) {
            // §4.2.2: 10% of the time since Last-Modified.
            lifetime = (max(0, dateValue - Double(modified)) * 0.1)
            a.lifetimeSource = .heuristic
        } else {
            a.lifetimeSource = .none
        }
        a.freshnessLifetime = lifetime
        a.freshFor = lifetime - a.age
        a.expires = responseTime.adding(seconds: lifetime - a.age)
        return a
    }
}
