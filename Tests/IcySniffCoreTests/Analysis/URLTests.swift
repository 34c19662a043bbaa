import Foundation
import Testing
@testable import IcySniffCore

/// The absolute URL of a transaction: scheme, host, target, with bytes outside the URI character
/// set percent-encoded as a browser would (RFC 3986 §2.1) and everything else kept as sent.
@Suite struct URLTests {
    /// The transaction of one request, answered with a 404 without a body (for CONNECT no
    /// tunnel, for every method no body to frame).
    func transaction(_ method: String = "GET", target: String, host: String = "example.com") -> Transaction? {
        Transcript("""
        >>>
        \(method) \(target) HTTP/1.1
        Host: \(host)

        <<<
        HTTP/1.1 404 Not Found
        Content-Length: 0

        """).run().first
    }

    func url(target: String, host: String = "example.com") -> String? { transaction(target: target, host: host)?.url }

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

    /// A target that is not UTF-8 (Latin-1 "é" is the byte E9): its URL percent-encodes the
    /// bytes as sent (%E9), not their Latin-1 reading encoded again as UTF-8 (%C3%A9).
    @Test func aTargetThatIsNotUTF8KeepsItsBytes() throws {
        let request = Array("GET /caf".utf8) + [0xE9, 0xD9] + Array("?q=\u{7f} HTTP/1.1\r\nHost: example.com\r\n\r\n".utf8)
        let t = try #require(Transcript(blocks: [(.client, request), (.server, Array("HTTP/1.1 204 No Content\r\n\r\n".utf8))]).run().first)
        #expect(t.url == "http://example.com/caf%E9%D9?q=%7F")
    }

    @Test func everyByteIsKeptOrEncodedAsRFC3986Says() {
        // Unreserved (§2.3), reserved (§2.2) and "%" (escapes already made) are kept; every
        // other byte, controls and non-ASCII included, is encoded.
        let kept = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~:/?#[]@!$&'()*+,;=%".utf8)
        for b in 0...255 {
            #expect(URLText.allowed(UInt8(b)) == kept.contains(UInt8(b)), "byte \(b)")
        }
    }

    @Test func theTargetFormsMakeTheirURLs() {
        // Asterisk-form (RFC 9110 §7.1): the effective URI has an empty path, no slash.
        let options = transaction("OPTIONS", target: "*")
        #expect(options?.url == "http://example.com")
        #expect(options?.request?.targetString == "*")
        // A target that does not start with a slash gets one.
        #expect(url(target: "a?b") == "http://example.com/a?b")
        // CONNECT: authority-form unless the target starts with "/" as text reads it; a "/"
        // followed by a combining mark is another character.
        #expect(connectURL(target: "/\u{e9}x") == "http://example.com/%C3%A9x")
        #expect(connectURL(target: "/\u{301}x") == "https:///%CC%81x")
        #expect(connectURL(target: "/x") == "http://example.com/x")
        #expect(connectURL(target: "proxy.test:443") == "https://proxy.test:443")
    }

    func connectURL(target: String) -> String? { transaction("CONNECT", target: target)?.url }

    /// NDJSON's `target` and HAR's `_requestTarget` and `queryString` give the target as its text:
    /// escaped for JSON, non-ASCII bytes as their characters, the query's pairs decoded.
    @Test func targetsAreWrittenAsTheirText() throws {
        let transactions = Transcript("""
        >>>
        GET /a"b\\c HTTP/1.1
        Host: example.com

        <<<
        HTTP/1.1 204 No Content

        >>>
        GET /caf\u{e9}?q=1&k=v%20w HTTP/1.1
        Host: example.com

        <<<
        HTTP/1.1 204 No Content

        >>>
        GET /caf\u{e9}/menu HTTP/1.1
        Host: example.com

        <<<
        HTTP/1.1 204 No Content

        """).run()
        #expect(transactions.count == 3)
        let out = OutputFile(memory: true)
        let writer = TableWriter(format: .ndjson, output: out, options: ExportOptions(), width: 400)
        for t in transactions { writer.consume(t) }
        writer.finish()
        let lines = String(decoding: out.takeBytes(), as: UTF8.self).split(separator: "\n")
        let targets = try lines.map { line -> String? in
            let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
            return object?["target"] as? String
        }
        #expect(targets == ["/a\"b\\c", "/caf\u{e9}?q=1&k=v%20w", "/caf\u{e9}/menu"])

        let har = HARWriter(options: ExportOptions())
        for t in transactions { har.consume(t) }
        let harOut = OutputFile(memory: true)
        har.write(to: harOut)
        let log = try JSONSerialization.jsonObject(with: Data(harOut.takeBytes())) as? [String: Any]
        let entries = (log?["log"] as? [String: Any])?["entries"] as? [[String: Any]] ?? []
        #expect(entries.map { $0["_requestTarget"] as? String } == targets)
        let queries = entries.map { (($0["request"] as? [String: Any])?["queryString"] as? [[String: String]]) ?? [] }
        #expect(queries.map { $0.map { [$0["name"] ?? "", $0["value"] ?? ""] } } == [[], [["q", "1"], ["k", "v w"]], []])
    }
}
