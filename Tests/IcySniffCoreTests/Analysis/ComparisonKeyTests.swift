import Testing
@testable import IcySniffCore

/// What makes two requests "the same" for `icy-sniff diff`: method and URL, with the values that
/// change from one load to the next by design masked, and nothing else.
@Suite struct ComparisonKeyTests {
    @Test func volatileValuesAreMasked() {
        func key(_ url: String) -> String { ComparisonKey.of(method: "GET", url: url) }
        #expect(key("https://a.test/api?ts=1764128000123&lang=en") == "GET https://a.test/api?ts=*&lang=en")
        #expect(key("https://a.test/api?_=17&id=42") == "GET https://a.test/api?_=*&id=42", "a named cache buster; a short id stays")
        #expect(key("https://a.test/x?req=3f2a9c1b8d7e6f50a1b2") == "GET https://a.test/x?req=*", "16+ hex digits")
        #expect(key("https://a.test/x?u=123e4567-e89b-12d3-a456-426614174000") == "GET https://a.test/x?u=*", "a UUID")
        #expect(key("https://a.test/x?token=[redacted 9 bytes]") == "GET https://a.test/x?token=*")
        #expect(key("https://a.test/x?v=2.1.0#top") == "GET https://a.test/x?v=2.1.0", "a version stays; the fragment goes")
        #expect(key("https://a.test/app.3f2a9c1b.js") == "GET https://a.test/app.3f2a9c1b.js", "paths are compared as they are")
        #expect(ComparisonKey.of(method: "POST", url: "https://a.test/x") != key("https://a.test/x"))
    }

    @Test func sidesAreBoundedByDistinctRequests() {
        let side = ComparisonSide(name: "many")
        for i in 0..<(ComparisonSide.maxKeys + 10) {
            side.add(ComparisonRow(method: "GET", url: "https://h\(i % 3).test/p\(i)", status: 200, bytes: 1, verdict: "", timeMilliseconds: 1,
                                   options: ExportOptions()))
        }
        #expect(side.total == ComparisonSide.maxKeys + 10 && side.uncompared == 10)
        let c = Comparison(side, ComparisonSide(name: "empty"))
        #expect(c.removed.count == ComparisonSide.maxKeys && c.hosts.count == 3)
    }
}
