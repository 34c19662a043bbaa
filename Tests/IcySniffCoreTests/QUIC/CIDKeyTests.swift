import Testing
@testable import IcySniffCore

/// `CIDKey` made by loading words from a datagram equals the key made by copying the bytes out:
/// otherwise a short header would not find its connection.
@Suite struct CIDKeyTests {
    @Test func wordsLoadedInPlaceMakeTheCopysKey() {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2_000 {
            let count = Int.random(in: 1...60, using: &generator)
            let bytes = (0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let offset = Int.random(in: 0..<count, using: &generator)
            let length = Int.random(in: 0...min(24, count - offset), using: &generator)
            bytes.withUnsafeBytes { buffer in
                let copied = CIDKey(UnsafeRawBufferPointer(rebasing: buffer[offset..<(offset + length)]))
                let loaded = CIDKey(buffer, at: offset, length: length)
                #expect(loaded == copied, "\(count) bytes, \(length) at \(offset)")
                #expect(loaded.hashValue == copied.hashValue)
            }
        }
    }

    /// Bytes past the CID differ, the keys do not; a byte inside differs, the keys do.
    @Test func onlyTheCIDsBytesCount() {
        let a: [UInt8] = [0x40] + (1...8).map { UInt8($0) } + [UInt8](repeating: 0xAA, count: 30)
        var b = a
        b[9...] = [UInt8](repeating: 0x55, count: 30)[...]
        var c = a
        c[8] ^= 1
        a.withUnsafeBytes { x in
            b.withUnsafeBytes { y in #expect(CIDKey(x, at: 1, length: 8) == CIDKey(y, at: 1, length: 8)) }
            c.withUnsafeBytes { y in #expect(CIDKey(x, at: 1, length: 8) != CIDKey(y, at: 1, length: 8)) }
        }
    }
}
