import Foundation
import Testing
@testable import IcySniffCore

/// The one-run header object writes exactly what the item-by-item calls write, and declines text
/// that needs escaping.
@Suite struct JSONWriterTests {
    @Test(arguments: [0, 2]) func nameValueObjectMatchesTheGenericCalls(indent: Int) {
        var rng = SplitMix(state: UInt64(40 + indent))
        let alphabet: [UInt8] = Array("abcXYZ-_:;/ 0123456789=,.".utf8) + [0x22, 0x5C, 0x0A, 0x09, 0xC3, 0xA9, 0x7F, 0x01]
        var written = 0, declined = 0
        for round in 0..<400 {
            let base = Int(rng.next() % 4)
            let nesting = Int(rng.next() % 3)
            let fast = JSONWriter(indent: indent)
            let slow = JSONWriter(indent: indent)
            for w in [fast, slow] {
                w.baseDepth = base
                w.beginObject()
                for _ in 0..<nesting { w.key("k"); w.beginObject() }
                w.key("headers"); w.beginArray()
            }
            for _ in 0..<Int(rng.next() % 4) {
                // Mostly plain text, sometimes a byte that needs escaping or is not ASCII.
                func text() -> [UInt8] {
                    let plain = rng.next() % 4 != 0
                    return (0..<Int(rng.next() % 20)).map { _ in
                        alphabet[Int(rng.next() % UInt64(plain ? alphabet.count - 8 : alphabet.count))]
                    }
                }
                let name = text(), value = text()
                let took = name.withUnsafeBufferPointer { n in value.withUnsafeBufferPointer { v in fast.nameValueObject(n, v) } }
                if took { written += 1 } else {
                    declined += 1
                    fast.beginObject()
                    fast.key("name"); name.withUnsafeBufferPointer { fast.string(bytes: $0) }
                    fast.key("value"); value.withUnsafeBufferPointer { fast.string(bytes: $0) }
                    fast.endObject()
                }
                slow.beginObject()
                slow.key("name"); name.withUnsafeBufferPointer { slow.string(bytes: $0) }
                slow.key("value"); value.withUnsafeBufferPointer { slow.string(bytes: $0) }
                slow.endObject()
            }
            for w in [fast, slow] {
                w.endArray()
                w.int("after", 1)
                for _ in 0..<nesting { w.endObject() }
                w.endObject()
            }
            #expect(fast.text == slow.text, "round \(round)")
        }
        #expect(written > 100 && declined > 50, "both paths taken (\(written) / \(declined))")
    }

    /// `appendEscaped` and `isPlain` against a byte-by-byte reference: random texts of every
    /// length up to 40 with the bytes each rule is about (below, at and above 0x20, 0x22, 0x5C
    /// and 0x80) at every position, escaped (with and without `asciiOnly`) and tested for
    /// plainness: the lengths around multiples of eight reach both the eight-bytes-at-a-time
    /// scan (`plainRun`) and its byte loop for the rest.
    @Test func escapingMatchesAByteByByteReference() {
        var rng = SplitMix(state: 35)
        let alphabet: [UInt8] = [0x00, 0x01, 0x09, 0x0A, 0x0D, 0x1F, 0x20, 0x21, 0x22, 0x23, 0x41, 0x5B, 0x5C, 0x5D,
                                 0x7E, 0x7F, 0x80, 0xA9, 0xC3, 0xFF, 0x61, 0x62, 0x2F, 0x3A]
        func reference(_ bytes: [UInt8], asciiOnly: Bool) -> [UInt8]? {
            var out: [UInt8] = []
            for c in bytes {
                switch c {
                case 0x22: out += [0x5C, 0x22]
                case 0x5C: out += [0x5C, 0x5C]
                case 0x0A: out += [0x5C, 0x6E]
                case 0x0D: out += [0x5C, 0x72]
                case 0x09: out += [0x5C, 0x74]
                case 0..<0x20: out += Array(String(format: "\\u%04x", Int(c)).utf8)
                case 0x80...: if asciiOnly { return nil } else { out.append(c) }
                default: out.append(c)
                }
            }
            return out
        }
        var plain = 0
        for round in 0..<4000 {
            // Mostly letters, so that long plain runs (the fast path) come up, with one to three
            // bytes from the alphabet anywhere.
            var bytes = (0..<Int(rng.next() % 41)).map { _ in UInt8(0x61 + rng.next() % 26) }
            if !bytes.isEmpty && rng.next() % 5 != 0 {
                for _ in 0..<(1 + Int(rng.next() % 3)) { bytes[Int(rng.next() % UInt64(bytes.count))] = alphabet[Int(rng.next() % UInt64(alphabet.count))] }
            }
            for asciiOnly in [false, true] {
                let w = JSONWriter()
                let ok = bytes.withUnsafeBufferPointer { w.appendEscaped($0, asciiOnly: asciiOnly) }
                let expected = reference(bytes, asciiOnly: asciiOnly)
                #expect(ok == (expected != nil), "round \(round)")
                if let expected { #expect(w.array == expected, "round \(round): \(bytes)") }
            }
            let isPlain = bytes.withUnsafeBufferPointer { JSONWriter.isPlain($0) }
            #expect(isPlain == bytes.allSatisfy { $0 >= 0x20 && $0 < 0x80 && $0 != 0x22 && $0 != 0x5C }, "round \(round): \(bytes)")
            if isPlain { plain += 1 }
        }
        #expect(plain > 500)
    }

    /// An empty buffer may have no address (an empty header storage): written as "".
    @Test func emptyTextWithoutAnAddress() {
        let none = UnsafeBufferPointer<UInt8>(start: nil, count: 0)
        for indent in [0, 2] {
            let w = JSONWriter(indent: indent)
            w.beginArray()
            #expect(w.nameValueObject(none, none))
            w.endArray()
            #expect(w.text == (indent == 0 ? "[{\"name\":\"\",\"value\":\"\"}]"
                                            : "[\n  {\n    \"name\": \"\",\n    \"value\": \"\"\n  }\n]"))
        }
    }

    @Test func declinedOutsideAnArrayOrAfterAKey() {
        let w = JSONWriter(indent: 2)
        let a: [UInt8] = Array("a".utf8)
        a.withUnsafeBufferPointer { p in
            #expect(!w.nameValueObject(p, p), "no open container")
            w.beginObject()
            w.key("x")
            #expect(!w.nameValueObject(p, p), "a key waits for its value")
        }
    }
}
