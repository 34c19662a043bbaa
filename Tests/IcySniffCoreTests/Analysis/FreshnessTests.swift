import Foundation
import Testing
@testable import IcySniffCore

/// RFC 9111 freshness and age, on transactions built from transcripts.
@Suite struct FreshnessTests {
    /// A GET answered with `headers`; the transcript clock puts the request at t+4 ms and the
    /// response at t+5 ms after 1_700_000_000 s.
    func assess(_ headers: [String], method: String = "GET", status: String = "200 OK", requestHeaders: [String] = []) -> CacheAssessment {
        let request = ([">>>", "\(method) /r HTTP/1.1", "Host: example.com"] + requestHeaders + [""]).joined(separator: "\n")
        let response = (["<<<", "HTTP/1.1 \(status)"] + headers + ["Content-Length: 0", "", ""]).joined(separator: "\n")
        let t = Transcript(request + "\n" + response).run()
        return CacheTracker.assessResponse(t[0])
    }

    static let date = "Tue, 14 Nov 2023 22:13:20 GMT"       // = 1_700_000_000

    @Test func rfc9111_4_2_1_maxAgeWinsOverExpires() {
        let a = assess(["Date: \(Self.date)", "Cache-Control: max-age=600", "Expires: Wed, 15 Nov 2023 22:13:20 GMT"])
        #expect(a.storable)
        #expect(a.lifetimeSource == .maxAge)
        #expect(a.freshnessLifetime == 600)
    }

    @Test func rfc9111_5_3_expiresRelativeToDate() {
        let a = assess(["Date: \(Self.date)", "Expires: Wed, 15 Nov 2023 22:13:20 GMT"])
        #expect(a.lifetimeSource == .expires)
        #expect(a.freshnessLifetime == 86_400)
    }

    @Test func rfc9111_5_3_invalidExpiresMeansExpired() {
        for bad in ["0", "-1", "Wed, 15 Nov 2023 22:13:20 UTC", "15-Nov-2023"] {
            let a = assess(["Date: \(Self.date)", "Expires: \(bad)", "Last-Modified: Mon, 13 Nov 2023 22:13:20 GMT"])
            #expect(a.lifetimeSource == .expires, "\(bad)")
            #expect(a.freshnessLifetime == 0, "\(bad): no heuristic fallback")
        }
    }

    @Test func rfc9110_5_6_7_obsoleteDateFormsAreAccepted() {
        #expect(HTTPDate.parse("Sunday, 06-Nov-94 08:49:37 GMT") == 784_111_777)
        #expect(HTTPDate.parse("Sun Nov  6 08:49:37 1994") == 784_111_777)
        #expect(HTTPDate.parse("sun, 06 nov 1994 08:49:37 gmt") == 784_111_777)
        #expect(HTTPDate.parse("Sun, 06 Nov 1994 08:49:37 +0000") == nil)
    }

    /// The IMF-fixdate fast path against the general parser: generated dates of every month, day
    /// name, case and clock, valid and not, each also with one byte replaced anywhere (a tab for
    /// a space, a letter for a digit, …): both give the same answer for every one.
    @Test func imfFixdateFastPathAgreesWithTheGeneralParser() {
        var rng = SplitMix(state: 9111)
        let days = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun", "sun", "SAT", "Xyz"]
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec", "nov", "DEC", "Foo"]
        let replacements: [UInt8] = [0x20, 0x09, 0x2C, 0x3A, 0x30, 0x39, 0x41, 0x61, 0x47, 0x2D, 0x00, 0xFF]
        var answered = 0
        for _ in 0..<20_000 {
            let d = days[Int(rng.next() % UInt64(days.count))], m = months[Int(rng.next() % UInt64(months.count))]
            let text = "\(d), \(String(format: "%02d", Int(rng.next() % 34))) \(m) \(1900 + Int(rng.next() % 200)) "
                + String(format: "%02d:%02d:%02d", Int(rng.next() % 26), Int(rng.next() % 62), Int(rng.next() % 62))
                + (rng.next() % 8 == 0 ? " gmt" : rng.next() % 10 == 0 ? " UTC" : " GMT")
            var bytes = Array(text.utf8)
            if rng.next() % 2 == 0 { bytes[Int(rng.next() % UInt64(bytes.count))] = replacements[Int(rng.next() % UInt64(replacements.count))] }
            let fast = bytes.withUnsafeBufferPointer { HTTPDate.parse(bytes: $0) }
            let general = bytes.withUnsafeBufferPointer { HTTPDate.general($0) }
            #expect(fast == general, "\(String(decoding: bytes, as: UTF8.self))")
            if fast != nil { answered += 1 }
        }
        #expect(answered > 2_000, "valid dates among them: \(answered)")
    }

    @Test func rfc9111_4_2_2_heuristicIsTenPercentOfLastModified() {
        let a = assess(["Date: \(Self.date)", "Last-Modified: Mon, 13 Nov 2023 22:13:20 GMT"])
        #expect(a.lifetimeSource == .heuristic)
        #expect(a.freshnessLifetime == 8_640)
        let notHeuristic = assess(["Date: \(Self.date)", "Last-Modified: Mon, 13 Nov 2023 22:13:20 GMT"], status: "500 Oops")
        #expect(!notHeuristic.storable)
    }

    @Test func rfc9111_4_2_3_ageWithClockSkewAndAgeHeader() {
        // Server clock one hour behind: apparent_age dominates.
        let behind = assess(["Date: Tue, 14 Nov 2023 21:13:20 GMT", "Cache-Control: max-age=7200"])
        #expect(abs(behind.age - 3600.005) < 0.001)
        // Server clock ahead: apparent age 0, the response delay (1 ms) plus Age remain.
        let ahead = assess(["Date: Tue, 14 Nov 2023 22:18:20 GMT", "Age: 30", "Cache-Control: max-age=60"])
        #expect(abs(ahead.age - 30.001) < 0.001)
        #expect(abs((ahead.freshFor ?? 0) - 29.999) < 0.001)
    }

    @Test func rfc9111_5_2_cacheControlParsing() {
        let cc = CacheControl(#"Max-Age = "600" , , community="max-age=1, no-store", PRIVATE"#)
        #expect(cc.maxAgeSeconds == 600)
        #expect(cc.has(.maxAge))
        #expect(!cc.has(.noStore))
        #expect(cc.has(.isPrivate))
        #expect(!cc.has(.isPublic) && !cc.has(.noCache) && !cc.has(.mustRevalidate))
        // Only the first max-age counts; several Cache-Control lines read as one list.
        let lines: HeaderFields = [HTTPHeader(name: "Cache-Control", value: "max-age=5, No-Cache"),
                                   HTTPHeader(name: "cache-control", value: "max-age=9, must-revalidate")]
        let both = CacheControl(lines)
        #expect(both.maxAgeSeconds == 5 && both.has(.noCache) && both.has(.mustRevalidate))
        let single: HeaderFields = [HTTPHeader(name: "Cache-Control", value: #"max-age="7", public"#)]
        #expect(CacheControl(single).maxAgeSeconds == 7 && CacheControl(single).has(.isPublic))
        #expect(CacheControl("max-age").has(.maxAge) && CacheControl("max-age").maxAgeSeconds == nil)
        #expect(CacheControl.deltaSeconds("99999999999") == 2_147_483_648)
        #expect(CacheControl.deltaSeconds("-1") == nil)
        #expect(CacheControl.deltaSeconds("3600.5") == nil)
        // Several Cache-Control lines act as one list (RFC 9110 §5.3); the first max-age wins.
        let a = assess(["Date: \(Self.date)", "Cache-Control: public", "Cache-Control: max-age=100, max-age=5"])
        #expect(a.freshnessLifetime == 100)
    }

    @Test func rfc9111_3_noStoreAndMethodsAreNotStorable() {
        #expect(!assess(["Cache-Control: no-store, max-age=60"]).storable)
        #expect(!assess(["Cache-Control: max-age=60"], method: "POST").storable)
        let noCache = assess(["Cache-Control: no-cache", "ETag: \"x\""])
        #expect(noCache.storable && noCache.mustRevalidate)
        #expect(!assess(["Cache-Control: proxy-revalidate, max-age=60"]).mustRevalidate)
    }

    @Test func rfc9111_4_avoidableNeedsAFreshStoredMatchingResponse() {
        let t = Transcript("""
        >>>
        GET /a HTTP/1.1
        Host: example.com

        <<<
        HTTP/1.1 200 OK
        Cache-Control: max-age=300
        Content-Length: 0

        >>>
        GET /a HTTP/1.1
        Host: example.com
        If-None-Match: "v1"

        <<<
        HTTP/1.1 304 Not Modified


        >>>
        GET /a?v=2 HTTP/1.1
        Host: example.com

        <<<
        HTTP/1.1 200 OK
        Content-Length: 0


        """).run()
        let tracker = CacheTracker()
        let results = t.map { tracker.assess($0) }
        #expect(results.map { $0?.avoidable } == [false, true, false])
        #expect(results[1]?.conditional == true && results[1]?.notModified == true)
    }

    /// A URL pushed out of a full model while its response was fresh: its next request is not
    /// called avoidable (the model no longer knows), but says that its verdict depended on it.
    @Test func aRequestForAnEvictedFreshURLSaysSo() throws {
        var text = ""
        for path in ["/a", "/b", "/c", "/a"] {
            text += """
            >>>
            GET \(path) HTTP/1.1
            Host: example.com

            <<<
            HTTP/1.1 200 OK
            Cache-Control: max-age=3600
            Content-Length: 0


            """
        }
        let t = Transcript(text).run()
        try #require(t.count == 4)
        let tracker = CacheTracker(maxURLs: 2)
        let results = t.map { tracker.assess($0) }
        #expect(results.map { $0?.avoidable } == [false, false, false, false])
        #expect(results.map { $0?.dependsOnEvictedEntry } == [false, false, false, true])
        #expect(tracker.evictions == 2)
        // With room for every URL, the last request is avoidable.
        let roomy = CacheTracker(maxURLs: 8)
        #expect(t.map { roomy.assess($0)?.avoidable } == [false, false, false, true])
    }

    /// The HAR's validators (`_cache.etag`, `_cache.lastModified`, `cache.afterRequest.eTag`) are
    /// the response's first ETag and Last-Modified fields as it sent them, non-ASCII text
    /// included; a response without them writes null (and "" for `eTag`).
    @Test func harValidatorsAreTheResponseFirstFields() throws {
        let t = Transcript("""
        >>>
        GET /a HTTP/1.1
        Host: example.com

        <<<
        HTTP/1.1 200 OK
        Cache-Control: max-age=300
        ETag: W/"café-1"
        ETag: "second"
        Last-Modified: Tue, 14 Nov 2023 22:13:20 GMT
        Content-Length: 0

        >>>
        GET /b HTTP/1.1
        Host: example.com

        <<<
        HTTP/1.1 200 OK
        Cache-Control: max-age=300
        Content-Length: 0


        """).run()
        try #require(t.count == 2)
        let tracker = CacheTracker()
        var entries: [[String: Any]] = []
        for transaction in t {
            tracker.assess(transaction)
            let w = JSONWriter()
            EntryEncoder.writeEntry(transaction, pageref: nil, to: w, options: ExportOptions())
            entries.append(try #require(JSONSerialization.jsonObject(with: Data(w.text.utf8)) as? [String: Any]))
        }
        let custom = entries.map { $0["_cache"] as? [String: Any] }
        let afterRequest = entries.map { ($0["cache"] as? [String: Any])?["afterRequest"] as? [String: Any] }
        #expect(custom[0]?["etag"] as? String == #"W/"café-1""#)
        #expect(custom[0]?["lastModified"] as? String == "Tue, 14 Nov 2023 22:13:20 GMT")
        #expect(afterRequest[0]?["eTag"] as? String == #"W/"café-1""#)
        #expect(custom[1]?["etag"] is NSNull && custom[1]?["lastModified"] is NSNull)
        #expect(afterRequest[1]?["eTag"] as? String == "")
    }

    /// `shortDuration` and `label` are written as bytes; they say what the interpolated
    /// definition below says, at every unit boundary and for random values.
    @Test func durationsAndLabelsSayWhatTheirDefinitionSays() {
        func reference(_ seconds: Double) -> String {
            guard seconds.isFinite, seconds < 1e15 else { return "∞" }
            var s = Int64(max(0, seconds).rounded(.down))
            let d = s / 86_400; s %= 86_400
            let h = s / 3600; s %= 3600
            let m = s / 60; s %= 60
            if d > 0 { return h > 0 ? "\(d)d\(h)h" : "\(d)d" }
            if h > 0 { return m > 0 ? "\(h)h\(m)m" : "\(h)h" }
            if m > 0 { return s > 0 ? "\(m)m\(s)s" : "\(m)m" }
            return "\(s)s"
        }
        var values: [Double] = [0, 0.9, 1, 9, 10, 59, 60, 61, 600, 3599, 3600, 3601, 3660, 86_399, 86_400, 86_401,
                                90_000, 1e9, 1e15 - 1, 1e15, .infinity, -.infinity, .nan, -5]
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2000 { values.append(Double(generator.next() % 10_000_000_000) / Double(1 + generator.next() % 1000)) }
        for v in values {
            #expect(CacheAssessment.shortDuration(v) == reference(v), "\(v)")
            for (source, storable, avoidable) in [(LifetimeSource.maxAge, true, false), (.heuristic, true, false), (.maxAge, true, true)] {
                var a = CacheAssessment()
                a.storable = storable
                a.lifetimeSource = source
                a.freshFor = v
                a.avoidable = avoidable
                let v2 = a.verdict
                let expected = v2 == "avoidable" ? "AVOIDABLE" : ["fresh", "heuristic"].contains(v2) ? "\(v2) \(reference(v))" : v2
                #expect(a.label == expected, "\(v) \(source)")
            }
        }
        var stale = CacheAssessment()
        stale.storable = true
        stale.freshFor = -1
        #expect(stale.label == "stale")
        #expect(CacheAssessment().label == "not-storable")
    }
}
