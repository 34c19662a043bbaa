import Testing
@testable import IcySniffCore

/// The HAR writer reads request cookies straight from the header bytes (ASCII values) and through
/// Strings otherwise; both must give the same entries. Each case is checked against the String
/// parser (`Cookies.parseRequest`, `EntryEncoder.redact`) as the reference.
@Suite struct CookieEncodingTests {
    /// Values built from the characters that matter to the splitting rules.
    static func randomValues(count: Int) -> [String] {
        let alphabet: [String] = ["a", "b", "=", ";", " ", "\t", "\"", "\\", "é", "z9", "\u{01}"]
        var rng = SplitMix(state: 0x1C5)
        return (0..<count).map { _ in
            let n = Int(rng.next() % 16)
            return (0..<n).map { _ in alphabet[Int(rng.next() % UInt64(alphabet.count))] }.joined()
        }
    }

    @Test func bytePathSplitsLikeTheStringParser() {
        for value in Self.randomValues(count: 3000) where value.utf8.allSatisfy({ $0 < 0x80 }) {
            var pairs: [(String, String)] = []
            Array(value.utf8).withUnsafeBufferPointer { v in
                Cookies.forEachRequestCookie(v) { name, val in
                    pairs.append((String(decoding: name, as: UTF8.self), String(decoding: val, as: UTF8.self)))
                }
            }
            let reference = Cookies.parseRequest(value)
            #expect(pairs.map(\.0) == reference.map(\.name), "names of \(value.debugDescription)")
            #expect(pairs.map(\.1) == reference.map(\.value), "values of \(value.debugDescription)")
        }
    }

    @Test func harCookiesAndRedactedHeaderMatchTheStringPath() {
        var options = ExportOptions()
        options.pretty = false
        for value in Self.randomValues(count: 3000) {
            let headers: HeaderFields = [HTTPHeader(name: "Cookie", value: value)]
            let fast = JSONWriter()
            EntryEncoder.writeHeaders(headers, to: fast, options: options)
            let reference = JSONWriter()
            reference.key("headers"); reference.beginArray(); reference.beginObject()
            reference.string("name", "Cookie")
            reference.string("value", EntryEncoder.redact(header: HTTPHeader(name: "Cookie", value: value), options: options))
            reference.endObject(); reference.endArray()
            #expect(fast.array == reference.array, "Cookie: \(value.debugDescription)")
        }
    }

    @Test func nonASCIICookieKeepsItsText() {
        var options = ExportOptions()
        options.pretty = false
        options.keepSecrets = true
        let headers: HeaderFields = [HTTPHeader(name: "Cookie", value: "name=café; x")]
        let w = JSONWriter()
        EntryEncoder.writeHeaders(headers, to: w, options: options)
        #expect(w.text == #""headers":[{"name":"Cookie","value":"name=café; x"}]"#)
    }
}

extension CookieEncodingTests {
    @Test(arguments: [false, true]) func requestCookiesMatchTheStringPath(keepSecrets: Bool) {
        var options = ExportOptions()
        options.pretty = false
        options.keepSecrets = keepSecrets
        for value in Self.randomValues(count: 3000) {
            let headers: HeaderFields = [HTTPHeader(name: "Cookie", value: value), HTTPHeader(name: "Accept", value: "*/*"),
                                         HTTPHeader(name: "cookie", value: "k=v")]
            let fast = JSONWriter()
            EntryEncoder.writeRequestCookies(headers, to: fast, options: options)
            let reference = JSONWriter()
            reference.key("cookies"); reference.beginArray()
            for v in headers.all(.cookie) {
                for c in Cookies.parseRequest(v) {
                    reference.beginObject(); reference.string("name", c.name)
                    reference.string("value", keepSecrets ? c.value : EntryEncoder.redacted(c.value)); reference.endObject()
                }
            }
            reference.endArray()
            #expect(fast.array == reference.array, "Cookie: \(value.debugDescription)")
        }
    }
}
