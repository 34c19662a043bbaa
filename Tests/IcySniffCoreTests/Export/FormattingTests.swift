import Foundation
import Testing
@testable import IcySniffCore

/// The writers format numbers and timestamps straight into their byte buffers; these check that
/// text against independent references.
@Suite struct FormattingTests {
    /// Reference: the decimal text of the rounded value, trailing zeros and point dropped.
    static func referenceNumber(_ v: Double, decimals: Int) -> String {
        var scale = 1.0
        for _ in 0..<decimals { scale *= 10 }
        let n = Int64((v * scale).rounded())
        let s = Int64(scale)
        var text = (n < 0 ? "-" : "") + String(n.magnitude / UInt64(s))
        var frac = String(n.magnitude % UInt64(s))
        guard decimals > 0, frac != "0" else { return text }
        frac = String(repeating: "0", count: decimals - frac.count) + frac
        while frac.hasSuffix("0") { frac.removeLast() }
        text += "." + frac
        return text
    }

    @Test func numbersMatchTheReference() {
        var rng = SplitMix(state: 77)
        var values: [Double] = [0, -0.0, 0.5, -0.5, 0.0004, -0.0004, 0.0005, 1, 10, 123.456, -123.456, 1e12, 4.2e15]
        for _ in 0..<5000 {
            let magnitude = pow(10, Double(Int(rng.next() % 16)) - 4)
            let sign: Double = rng.next() % 3 == 0 ? -1 : 1
            values.append(sign * magnitude * Double(rng.next() % 1_000_000) / 1_000_000)
        }
        for v in values {
            for decimals in [0, 1, 3, 6, 9] where abs(v) * pow(10, Double(decimals)) < 9e18 {
                let out = ByteBuffer()
                JSONWriter.appendNumber(v, decimals: decimals, to: out)
                #expect(out.text == Self.referenceNumber(v, decimals: decimals), "\(v) with \(decimals)")
            }
        }
        let out = ByteBuffer()
        JSONWriter.appendNumber(.nan, decimals: 3, to: out)
        #expect(out.array == Array("null".utf8))
    }

    @Test func timestampsMatchGmtime() {
        var rng = SplitMix(state: 1970)
        for _ in 0..<5000 {
            let seconds = Int64(rng.next() % 4_102_444_800)   // 1970 ... 2100
            let nanos = Int64(rng.next() % 1_000_000_000)
            let t = Timestamp(seconds: seconds, nanoseconds: nanos)
            var time = time_t(seconds)
            var parts = tm()
            gmtime_r(&time, &parts)
            let base = String(format: "%04d-%02d-%02dT%02d:%02d:%02d", parts.tm_year + 1900, parts.tm_mon + 1, parts.tm_mday,
                              parts.tm_hour, parts.tm_min, parts.tm_sec)
            for digits in [0, 3, 6, 9] {
                let fraction = digits == 0 ? "" : "." + String(String(format: "%09lld", nanos).prefix(digits))
                #expect(t.iso8601(fractionDigits: digits) == base + fraction + "Z")
            }
        }
    }
}

extension FormattingTests {
    /// Commas and indentation are tracked per level in a bit set for the first 64 levels and an
    /// array past them; both must give valid JSON.
    @Test(arguments: [0, 2]) func deepNestingStaysValidJSON(indent: Int) throws {
        let w = JSONWriter(indent: indent)
        for _ in 0..<100 { w.beginArray(); w.int(1); w.beginObject(); w.int("k", 2); w.key("next") ; w.beginArray() }
        w.string("end")
        for _ in 0..<100 { w.endArray(); w.endObject(); w.int(3); w.endArray() }
        let parsed = try JSONSerialization.jsonObject(with: Data(w.array))
        var node: Any = parsed
        for _ in 0..<100 {
            let array = try #require(node as? [Any])
            #expect(array.count == 3)
            let object = try #require(array[1] as? [String: Any])
            #expect(object["k"] as? Int == 2)
            let next = try #require(object["next"] as? [Any])
            #expect(next.count == 1)
            node = next[0]
        }
        #expect(node as? String == "end")
    }

    @Test func prettyLayout() {
        let w = JSONWriter(indent: 2)
        w.beginObject(); w.string("a", "x"); w.key("b"); w.beginArray(); w.int(1); w.int(2); w.endArray()
        w.key("c"); w.beginObject(); w.endObject(); w.endObject()
        #expect(w.text == "{\n  \"a\": \"x\",\n  \"b\": [\n    1,\n    2\n  ],\n  \"c\": {}\n}")
    }
}
