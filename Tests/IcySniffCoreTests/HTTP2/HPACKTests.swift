import Testing
@testable import IcySniffCore

/// HPACK decoding (libnghttp2's inflater behind `HPACKDecoder`) against RFC 7541 Appendix C:
/// each example is a sequence of header blocks on one connection, so the dynamic table, its
/// evictions (C.5, C.6 with a 256-byte table) and Huffman coding (C.4, C.6) are all exercised.
@Suite struct HPACKTests {
    static func bytes(_ hex: String) -> [UInt8] {
        let digits = Array(hex.replacingOccurrences(of: " ", with: "").utf8)
        return stride(from: 0, to: digits.count, by: 2).map { UInt8(String(decoding: digits[$0..<($0 + 2)], as: UTF8.self), radix: 16)! }
    }

    static func decode(_ decoder: HPACKDecoder, _ block: [UInt8]) -> [String]? {
        var fields: [String] = []
        let ok = block.withUnsafeBytes { raw in
            decoder.decode(raw) { name, value in
                fields.append(String(decoding: name, as: UTF8.self) + ": " + String(decoding: value, as: UTF8.self))
            }
        }
        return ok ? fields : nil
    }

    static let requests = [
        [":method: GET", ":scheme: http", ":path: /", ":authority: www.example.com"],
        [":method: GET", ":scheme: http", ":path: /", ":authority: www.example.com", "cache-control: no-cache"],
        [":method: GET", ":scheme: https", ":path: /index.html", ":authority: www.example.com", "custom-key: custom-value"],
    ]

    static let responses = [
        [":status: 302", "cache-control: private", "date: Mon, 21 Oct 2013 20:13:21 GMT", "location: https://www.example.com"],
        [":status: 307", "cache-control: private", "date: Mon, 21 Oct 2013 20:13:21 GMT", "location: https://www.example.com"],
        [":status: 200", "cache-control: private", "date: Mon, 21 Oct 2013 20:13:22 GMT", "location: https://www.example.com",
         "content-encoding: gzip", "set-cookie: foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1"],
    ]

    /// C.3: requests without Huffman coding.
    @Test func requestsWithoutHuffman() throws {
        let decoder = HPACKDecoder()
        let blocks = ["8286 8441 0f77 7777 2e65 7861 6d70 6c65 2e63 6f6d",
                      "8286 84be 5808 6e6f 2d63 6163 6865",
                      "8287 85bf 400a 6375 7374 6f6d 2d6b 6579 0c63 7573 746f 6d2d 7661 6c75 65"]
        for (block, expected) in zip(blocks, Self.requests) {
            #expect(Self.decode(decoder, Self.bytes(block)) == expected)
        }
    }

    /// C.4: the same requests, Huffman coded.
    @Test func requestsWithHuffman() throws {
        let decoder = HPACKDecoder()
        let blocks = ["8286 8441 8cf1 e3c2 e5f2 3a6b a0ab 90f4 ff",
                      "8286 84be 5886 a8eb 1064 9cbf",
                      "8287 85bf 4088 25a8 49e9 5ba9 7d7f 8925 a849 e95b b8e8 b4bf"]
        for (block, expected) in zip(blocks, Self.requests) {
            #expect(Self.decode(decoder, Self.bytes(block)) == expected)
        }
    }

    /// C.5 and C.6: responses with a 256-byte dynamic table, so that entries are evicted; the
    /// decoder's limit comes from SETTINGS_HEADER_TABLE_SIZE, and the encoder then starts its
    /// next block with a size update (0x3fe101 = 256), as RFC 7541 §4.2 requires.
    @Test(arguments: [false, true])
    func responsesWithEvictions(huffman: Bool) throws {
        let decoder = HPACKDecoder()
        decoder.setTableSizeLimit(256)
        let plain = ["4803 3330 3258 0770 7269 7661 7465 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133 2032 303a 3133 3a32 3120 474d 546e 1768 7474 7073 3a2f 2f77 7777 2e65 7861 6d70 6c65 2e63 6f6d",
                     "4803 3330 37c1 c0bf",
                     "88c1 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133 2032 303a 3133 3a32 3220 474d 54c0 5a04 677a 6970 7738 666f 6f3d 4153 444a 4b48 514b 425a 584f 5157 454f 5049 5541 5851 5745 4f49 553b 206d 6178 2d61 6765 3d33 3630 303b 2076 6572 7369 6f6e 3d31"]
        let coded = ["4882 6402 5885 aec3 771a 4b61 96d0 7abe 9410 54d4 44a8 2005 9504 0b81 66e0 82a6 2d1b ff6e 919d 29ad 1718 63c7 8f0b 97c8 e9ae 82ae 43d3",
                     "4883 640e ffc1 c0bf",
                     "88c1 6196 d07a be94 1054 d444 a820 0595 040b 8166 e084 a62d 1bff c05a 839b d9ab 77ad 94e7 821d d7f2 e6c7 b335 dfdf cd5b 3960 d5af 2708 7f36 72c1 ab27 0fb5 291f 9587 3160 65c0 03ed 4ee5 b106 3d50 07"]
        let blocks = huffman ? coded : plain
        for (i, (block, expected)) in zip(blocks, Self.responses).enumerated() {
            let bytes = (i == 0 ? Self.bytes("3fe101") : []) + Self.bytes(block)
            #expect(Self.decode(decoder, bytes) == expected, "block \(i + 1)")
        }
    }

    /// Without the size update an encoder owes after a smaller limit took effect, or with a
    /// reference to an entry the table does not have, decoding stops: the table is unknown
    /// from then on and later blocks are refused rather than guessed.
    @Test func aBlockThatDoesNotDecodeBreaksTheDecoder() throws {
        let decoder = HPACKDecoder()
        #expect(Self.decode(decoder, Self.bytes("be")) == nil, "index 62 with an empty dynamic table")
        #expect(decoder.broken)
        #expect(Self.decode(decoder, Self.bytes("82")) == nil, "refused after")
        let strict = HPACKDecoder()
        strict.setTableSizeLimit(256)
        #expect(Self.decode(strict, Self.bytes("82")) == nil, "the size update is missing")
        let cut = HPACKDecoder()
        #expect(Self.decode(cut, Self.bytes("4088 25a8 49e9 5ba9")) == nil, "a block that ends inside a field")
    }
}
