@testable import IcySniffCore
import Testing

/// The output byte buffer against an Array doing the same appends: growth from a tiny capacity
/// across many doublings, every append form, truncation and reuse.
@Suite struct ByteBufferTests {
    @Test func matchesAnArrayDoingTheSameAppends() {
        var rng = SplitMix(state: 42)
        let buffer = ByteBuffer(capacity: 1)   // starts at the minimum, so it grows many times
        var reference: [UInt8] = []
        for step in 0..<20_000 {
            switch rng.next() % 6 {
            case 0:
                let b = UInt8(truncatingIfNeeded: rng.next())
                buffer.append(b); reference.append(b)
            case 1:
                let a = UInt8(truncatingIfNeeded: rng.next()), b = UInt8(truncatingIfNeeded: rng.next())
                buffer.append(a, b); reference += [a, b]
            case 2:
                let chunk = (0..<Int(rng.next() % 300)).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
                chunk.withUnsafeBufferPointer { buffer.append($0) }; reference += chunk
            case 3:
                buffer.append("static text"); reference += Array("static text".utf8)
            case 4:
                let v = Int64(bitPattern: rng.next()) >> Int64(rng.next() % 64)
                JSONWriter.appendInteger(v, to: buffer); reference += Array(String(v).utf8)
            default:
                if !reference.isEmpty, rng.next() % 4 == 0 {
                    let keep = Int(rng.next() % UInt64(reference.count + 1))
                    buffer.truncate(to: keep); reference.removeSubrange(keep...)
                }
            }
            if step % 997 == 0 { #expect(buffer.array == reference, "step \(step)") }
        }
        #expect(buffer.count == reference.count)
        #expect(buffer.array == reference)
        #expect(buffer.capacity >= buffer.count)
        buffer.removeAll()
        #expect(buffer.isEmpty && buffer.array.isEmpty)
        buffer.append("again")
        #expect(buffer.text == "again")
    }

    @Test func writerResetKeepsNothingOfTheLastRecord() {
        let w = JSONWriter()
        w.beginObject(); w.string("a", String(repeating: "x", count: 10_000)); w.endObject()
        w.reset()
        w.beginObject(); w.int("b", 1); w.endObject()
        #expect(w.text == #"{"b":1}"#)
    }
}
