import Testing
@testable import IcySniffCore

/// The frame parser reads a plaintext's frames whatever PADDING lies between them (RFC 9000
/// §19.1: each zero byte is a frame of its own; runs are skipped a word at a time).
@Suite struct QUICFrameParserTests {
    /// A STREAM frame with offset and length, `padding` zero bytes, a PING, a CRYPTO frame, and
    /// `trailing` zero bytes to the end, for every run length around the 8-byte step: the same
    /// two frames with their data, and nothing after them.
    @Test func paddingOfAnyLengthIsReadOver() throws {
        for padding in 0...19 {
            for trailing in [0, 1, 7, 8, 9, 900] {
                var plaintext: [UInt8] = [0x0e, 0x04, 0x05, 0x03] + Array("abc".utf8)   // STREAM id 4, offset 5, length 3
                plaintext += [UInt8](repeating: 0, count: padding) + [0x01]             // PADDING, PING
                plaintext += [0x06, 0x00, 0x02, 0xAA, 0xBB]                              // CRYPTO offset 0, length 2
                plaintext += [UInt8](repeating: 0, count: trailing)
                let frames = plaintext.withUnsafeBytes { raw -> [String] in
                    QUICFrameParser(raw).compactMap { frame -> String? in
                        switch frame {
                        case .stream(let id, let offset, let data, let fin): return "stream \(id) \(offset) \(Array(data)) \(fin)"
                        case .crypto(let offset, let data): return "crypto \(offset) \(Array(data))"
                        case .other: return nil
                        default: return "unexpected"
                        }
                    }
                }
                #expect(frames == ["stream 4 5 [97, 98, 99] false", "crypto 0 [170, 187]"], "padding \(padding), trailing \(trailing)")
            }
        }
    }
}
