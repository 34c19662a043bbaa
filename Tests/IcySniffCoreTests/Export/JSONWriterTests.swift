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
