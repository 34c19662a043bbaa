@testable import IcySniffCore
import Testing

/// Header names are recognised by a switch on length and first letter: every known name in any
/// case maps to its id, and near misses (one letter changed, one added or dropped) do not.
@Suite struct FieldNameTests {
    @Test func everyKnownNameInAnyCaseAndNoNearMiss() {
        for id in FieldName.allCases where id != .other {
            let name = id.canonical
            #expect(FieldName(name) == id, "\(name)")
            #expect(FieldName(name.lowercased()) == id, "\(name)")
            #expect(FieldName(name.uppercased()) == id, "\(name)")
            #expect(FieldName(name + "s") == .other, "\(name)s")
            #expect(FieldName(String(name.dropLast())) == .other, "\(name) without its last letter")
            var bytes = Array(name.utf8)
            for k in bytes.indices {
                let saved = bytes[k]
                bytes[k] = saved == UInt8(ascii: "x") ? UInt8(ascii: "y") : UInt8(ascii: "x")
                #expect(FieldName(String(decoding: bytes, as: UTF8.self)) == .other, "\(name) with byte \(k) changed")
                bytes[k] = saved
            }
        }
        #expect(FieldName("") == .other)
        #expect(FieldName("X-Forwarded-For") == .other)
        #expect(FieldName("Content-Typé") == .other)
    }

    /// Every byte value at every position of every known name: recognised exactly when the
    /// byte is the name's in either case (the word-at-a-time comparison against the per-byte one).
    @Test func everyByteAtEveryPosition() {
        for id in FieldName.allCases where id != .other {
            let lower = Array(id.canonical.lowercased().utf8)
            var bytes = lower
            for k in bytes.indices {
                for v in 0...255 {
                    bytes[k] = UInt8(v)
                    let got = bytes.withUnsafeBufferPointer { FieldName(buffer: $0) }
                    #expect((got == id) == (lowerASCII(UInt8(v)) == lower[k]), "\(id.canonical) with byte \(k) = \(v)")
                }
                bytes[k] = lower[k]
            }
        }
    }
}
