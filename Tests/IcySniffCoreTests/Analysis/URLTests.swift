import Testing
@testable import IcySniffCore

/// The absolute URL of a transaction: scheme, host, target, with bytes outside the URI character
/// set percent-encoded as a browser would (RFC 3986 §2.1) and everything else kept as sent.
@Suite struct URLTests {
    func url(target: String, host: String = "example.com") -> String? {
        let transactions = Transcript("""
        >>>
        GET \(target) HTTP/1.1
        Host: \(host)

        <<<
        HTTP/1.1 204 No Content

        """).run()
        return transactions.first?.url
    }

    @Test func plainTargetsAreKeptAsSent() {
        #expect(url(target: "/a/b.json?x=1&y=%41#frag") == "http://example.com/a/b.json?x=1&y=%41#frag")
        #expect(url(target: "/", host: "Example.COM:8080") == "http://Example.COM:8080/")
        #expect(url(target: "http://other.test/p?q") == "http://other.test/p?q")
    }

    @Test func bytesOutsideTheURICharacterSetArePercentEncoded() {
        // A space, a quote, a caret and UTF-8 "é" (C3 A9) in one target; runs between them kept.
        #expect(url(target: "/a b\"c^d/caf\u{e9}?k=v v") == "http://example.com/a%20b%22c%5Ed/caf%C3%A9?k=v%20v")
        #expect(url(target: "/x", host: "h\u{e9}.test") == "http://h%C3%A9.test/x")
        #expect(url(target: "/end ") == "http://example.com/end")
    }
}
