import Testing
@testable import IcySniffCore

/// Content-Encoding decoding (RFC 9110 §8.4.1): each coding, stacked codings, any split of the
/// input, and failures keep the raw size.
@Suite struct ContentDecoderTests {
    static let text = Array(String(repeating: "icy-sniff decodes bodies. ", count: 40).utf8)

    static let gzip: [UInt8] = [0x1f, 0x8b, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x03, 0xcb, 0x4c, 0xae, 0xd4, 0x2d, 0xce, 0xcb, 0x4c, 0x4b, 0x53, 0x48, 0x49, 0x4d, 0xce, 0x4f, 0x49, 0x2d, 0x56, 0x48, 0xca, 0x4f, 0xc9, 0x4c, 0x2d, 0xd6, 0x53, 0xc8, 0x1c, 0x95, 0x19, 0x95, 0x19, 0x95, 0x19, 0x61, 0x32, 0x00, 0x37, 0x15, 0xee, 0xb4, 0x10, 0x04, 0x00, 0x00]
    static let brotli: [UInt8] = [0x1f, 0x0f, 0x04, 0xf8, 0xc5, 0x4d, 0x97, 0x2a, 0xa1, 0xf8, 0x1a, 0x2e, 0xb8, 0x51, 0x6e, 0x20, 0x3d, 0x3a, 0x8c, 0x14, 0x00, 0xdb, 0xfd, 0x2b, 0xcf, 0x33, 0xa0, 0x7a, 0xa9, 0xe0, 0x2e, 0xad, 0x1c, 0x00]
    static let zstd: [UInt8] = [0x28, 0xb5, 0x2f, 0xfd, 0x04, 0x58, 0x15, 0x01, 0x00, 0xd0, 0x69, 0x63, 0x79, 0x2d, 0x73, 0x6e, 0x69, 0x66, 0x66, 0x20, 0x64, 0x65, 0x63, 0x6f, 0x64, 0x65, 0x73, 0x20, 0x62, 0x6f, 0x64, 0x69, 0x65, 0x73, 0x2e, 0x20, 0x01, 0x00, 0xce, 0xef, 0x6a, 0x8e, 0x01, 0xf1, 0x42, 0x69, 0x56]
    static let zlibDeflate: [UInt8] = [0x78, 0x9c, 0xcb, 0x4c, 0xae, 0xd4, 0x2d, 0xce, 0xcb, 0x4c, 0x4b, 0x53, 0x48, 0x49, 0x4d, 0xce, 0x4f, 0x49, 0x2d, 0x56, 0x48, 0xca, 0x4f, 0xc9, 0x4c, 0x2d, 0xd6, 0x53, 0xc8, 0x1c, 0x95, 0x19, 0x95, 0x19, 0x95, 0x19, 0x61, 0x32, 0x00, 0x55, 0xec, 0x77, 0x88]
    static let rawDeflate: [UInt8] = [0xcb, 0x4c, 0xae, 0xd4, 0x2d, 0xce, 0xcb, 0x4c, 0x4b, 0x53, 0x48, 0x49, 0x4d, 0xce, 0x4f, 0x49, 0x2d, 0x56, 0x48, 0xca, 0x4f, 0xc9, 0x4c, 0x2d, 0xd6, 0x53, 0xc8, 0x1c, 0x95, 0x19, 0x95, 0x19, 0x95, 0x19, 0x61, 0x32, 0x00]
    static let gzipThenBrotli: [UInt8] = [0x0f, 0x1b, 0x80, 0x1f, 0x8b, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x03, 0xcb, 0x4c, 0xae, 0xd4, 0x2d, 0xce, 0xcb, 0x4c, 0x4b, 0x53, 0x48, 0x49, 0x4d, 0xce, 0x4f, 0x49, 0x2d, 0x56, 0x48, 0xca, 0x4f, 0xc9, 0x4c, 0x2d, 0xd6, 0x53, 0xc8, 0x1c, 0x95, 0x19, 0x95, 0x19, 0x95, 0x19, 0x61, 0x32, 0x00, 0x37, 0x15, 0xee, 0xb4, 0x10, 0x04, 0x00, 0x00, 0x03]

    static let cases: [(String, [UInt8])] = [
        ("gzip", gzip), ("x-gzip", gzip), ("br", brotli), ("zstd", zstd),
        ("deflate", zlibDeflate), ("deflate", rawDeflate), ("gzip, br", gzipThenBrotli),
    ]

    func decode(_ encoding: String, _ input: [UInt8], step: Int, cap: UInt64 = 1 << 30) throws -> ([UInt8], ContentDecoder) {
        let tokens = encoding.split(separator: ",").map { $0.trimmingASCIIWhitespace() }
        let decoder = try #require(try ContentDecoder(encodings: tokens, maxOutput: cap))
        var out: [UInt8] = []
        var i = 0
        while i < input.count {
            let end = min(input.count, i + step)
            _ = input[i..<end].withUnsafeBytes { raw in
                decoder.feed(raw) { out.append(contentsOf: $0) }
            }
            i = end
        }
        decoder.finish { out.append(contentsOf: $0) }
        return (out, decoder)
    }

    @Test(arguments: 0..<7)
    func decodesEveryCodingAtAnySplit(_ index: Int) throws {
        let (encoding, input) = Self.cases[index]
        for step in [1, 2, 3, 7, 64, input.count] {
            let (out, decoder) = try decode(encoding, input, step: step)
            #expect(out == Self.text, "\(encoding) in steps of \(step)")
            #expect(!decoder.failed)
        }
    }

    @Test func corruptInputFails() throws {
        var broken = Self.gzip
        for i in 12..<30 { broken[i] ^= 0x5a }
        let (_, decoder) = try decode("gzip", broken, step: 5)
        #expect(decoder.failed)
    }

    @Test func decompressionStopsAtTheCap() throws {
        let (out, decoder) = try decode("gzip", Self.gzip, step: 64, cap: 100)
        #expect(out.count == 100)
        #expect(decoder.capped)
    }

    @Test func identityNeedsNoDecoderAndUnknownCodingsAreReported() throws {
        #expect(try ContentDecoder(encodings: ["identity"], maxOutput: 10) == nil)
        #expect(throws: ContentDecoder.UnsupportedCoding.self) { _ = try ContentDecoder(encodings: ["compress"], maxOutput: 10) }
    }

    /// The whole-body fast path (libdeflate) must give exactly what zlib's streaming inflate gives:
    /// same bytes, same failure, same cap, for good, truncated, corrupt, trailing-garbage and
    /// multi-member bodies in the three deflate wrappers.
    @Test func wholeBodyFastPathAgreesWithStreaming() throws {
        var rng = SplitMix(state: 9111)
        var checked = 0, fast = 0
        for round in 0..<60 {
            let words = ["cache", "icy", "sniff", "GET", "200", "{\"id\":", "\n", "max-age=", "zz"]
            var plain: [UInt8] = []
            for _ in 0..<Int(rng.next() % 20_000) { plain += Array(words[Int(rng.next() % UInt64(words.count))].utf8) }
            for (coding, windowBits) in [("gzip", Int32(31)), ("deflate", Int32(15)), ("deflate", Int32(-15)), ("gzip", Int32(15))] {
                let good = zlibCompress(plain, windowBits: windowBits)
                var variants = [good, Array(good.dropLast(1 + Int(rng.next() % 7))), good + [0x00, 0x42], good + good]
                var corrupt = good
                if corrupt.count > 12 { corrupt[10 + Int(rng.next() % UInt64(corrupt.count - 10))] ^= 0x24 }
                variants.append(corrupt)
                for input in variants {
                    for cap in [UInt64(1 << 30), UInt64(plain.count / 2 + 1)] {
                        var results: [([UInt8], Bool, Bool)] = []
                        var counts: [UInt64] = []
                        for (whole, keeps) in [(true, true), (false, true), (true, false)] {
                            let d = try #require(try ContentDecoder(encodings: [coding], maxOutput: cap, wholeBody: whole,
                                                                    keepsOutput: keeps))
                            var out: [UInt8] = []
                            var i = 0
                            let step = 1 + Int(rng.next() % 3000)
                            while i < input.count {
                                let end = min(input.count, i + step)
                                _ = input[i..<end].withUnsafeBytes { raw in d.feed(raw) { out.append(contentsOf: $0) } }
                                i = end
                            }
                            d.finish { out.append(contentsOf: $0) }
                            if d.decodedWhole && keeps { fast += 1 }
                            if !keeps { #expect(out.isEmpty, "a counting decoder hands out no bytes") }
                            results.append((keeps ? out : results[0].0, d.failed, d.capped))
                            counts.append(d.decodedCount)
                        }
                        for r in 1..<3 {
                            #expect(results[0].0 == results[r].0, "round \(round) \(coding) \(windowBits): output differs")
                            #expect(results[0].1 == results[r].1 && results[0].2 == results[r].2,
                                    "round \(round) \(coding) \(windowBits): failed/capped differ (\(r))")
                        }
                        #expect(counts[0] == UInt64(results[0].0.count) && counts[1] == counts[0] && counts[2] == counts[0],
                                "round \(round) \(coding) \(windowBits): decoded counts \(counts)")
                        checked += 1
                    }
                }
            }
        }
        #expect(checked == 60 * 4 * 5 * 2)
        #expect(fast >= checked / 20, "the fast path is taken for well-formed bodies (\(fast) of \(checked))")
    }

    /// A counting decoder inflates a body it has seen byte for byte before only once (the memo), and
    /// the memo never answers for different bytes: a copy with one byte changed in the middle (same
    /// length, same gzip trailer) is inflated, and fails its CRC, as without the memo.
    @Test func identicalBodiesAreInflatedOnceAndOnlyIdenticalOnes() throws {
        var rng = SplitMix(state: 0x1c7_5eed)
        var plain = Array("memo test \(rng.next()) \(rng.next())\n".utf8)
        for _ in 0..<3000 { plain += Array(["alpha", "beta", "{\"k\":", "\n"][Int(rng.next() % 4)].utf8) }
        let body = zlibCompress(plain, windowBits: 31)
        func count(_ input: [UInt8]) throws -> ContentDecoder {
            let d = try #require(try ContentDecoder(encodings: ["gzip"], maxOutput: 1 << 30, keepsOutput: false))
            input.withUnsafeBytes { _ = d.feed($0) { _ in Issue.record("a counting decoder called output") } }
            d.finish { _ in Issue.record("a counting decoder called output") }
            return d
        }
        let first = try count(body)
        #expect(!first.decodedFromMemo && first.decodedWhole && first.decodedCount == UInt64(plain.count))
        let again = try count(body)
        #expect(again.decodedFromMemo, "the second identical body comes from the memo")
        #expect(again.decodedCount == UInt64(plain.count) && !again.failed)
        var changed = body
        changed[body.count / 2] ^= 0x01
        let other = try count(changed)
        #expect(!other.decodedFromMemo)
        #expect(other.failed, "a changed byte breaks the CRC, memo or not")
        // The memo gives exactly what inflating gives, cap included: a cap below the size streams.
        let capped = try #require(try ContentDecoder(encodings: ["gzip"], maxOutput: 100, keepsOutput: false))
        body.withUnsafeBytes { _ = capped.feed($0) { _ in } }
        capped.finish { _ in }
        #expect(!capped.decodedFromMemo && capped.capped && capped.decodedCount == 100)
    }

    /// Regression (FuzzContentDecoder, session 2): raw deflate that zlib rejects ("invalid
    /// literal/length code") but libdeflate decodes to 268 bytes; both paths must report failure.
    @Test func rawDeflateRejectedByZlibFailsOnBothPaths() throws {
        let input: [UInt8] = [0xdb, 0x14, 0xdb, 0xdb, 0x39, 0x0e, 0xdb, 0xdb, 0xdb, 0xdb, 0xdb, 0xdb, 0x00]
        for whole in [true, false] {
            let d = try #require(try ContentDecoder(encodings: ["deflate"], maxOutput: 1 << 22, wholeBody: whole))
            for b in input { [b].withUnsafeBytes { raw in _ = d.feed(raw) { _ in } } }
            d.finish { _ in }
            #expect(d.failed, "wholeBody: \(whole)")
            #expect(!d.decodedWhole)
        }
    }

    func zlibCompress(_ input: [UInt8], windowBits: Int32) -> [UInt8] {
        var z = z_stream()
        deflateInit2_(&z, 6, Z_DEFLATED, windowBits, 8, Z_DEFAULT_STRATEGY, ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size))
        var out = [UInt8](repeating: 0, count: Int(deflateBound(&z, uLong(input.count))) + 64)
        var input = input
        let n = input.withUnsafeMutableBufferPointer { inp in
            out.withUnsafeMutableBufferPointer { o in
                z.next_in = inp.baseAddress; z.avail_in = uInt(inp.count)
                z.next_out = o.baseAddress; z.avail_out = uInt(o.count)
                deflate(&z, Z_FINISH)
                return o.count - Int(z.avail_out)
            }
        }
        deflateEnd(&z)
        return Array(out[0..<n])
    }

    @Test func gzipBodyIsDecodedInATranscript() {
        var response = Array("HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: \(Self.gzip.count)\r\n\r\n".utf8)
        response += Self.gzip
        let t = Transcript(blocks: [(.client, Array("GET / HTTP/1.1\r\nHost: x\r\n\r\n".utf8)), (.server, response)])
        for size in [0, 1, 5] {
            let result = t.run(segmentSize: size)
            #expect(result.count == 1)
            #expect(result.first?.response?.body.decodedBytes == UInt64(Self.text.count))
            #expect(result.first?.response?.body.bytes == UInt64(Self.gzip.count))
        }
    }
}

import CZlib

/// A decompression bomb: a small deflate body that inflates to 64 MiB; decoding stops at the cap
/// and the size is flagged as a lower bound, while the wire size stays exact.
@Suite struct DecompressionBombTests {
    @Test func bombIsCappedAndFlagged() throws {
        let plain = [UInt8](repeating: 0, count: 64 << 20)
        var compressedLength = compressBound(uLong(plain.count))
        var compressed = [UInt8](repeating: 0, count: Int(compressedLength))
        let rc = compress2(&compressed, &compressedLength, plain, uLong(plain.count), 9)
        #expect(rc == Z_OK)
        compressed.removeLast(compressed.count - Int(compressedLength))
        #expect(compressed.count < 100_000)
        var response = Array("HTTP/1.1 200 OK\r\nContent-Encoding: deflate\r\nContent-Length: \(compressed.count)\r\n\r\n".utf8)
        response += compressed
        var options = HTTPParserOptions()
        options.maxDecodedBytes = 1 << 20
        let t = Transcript(blocks: [(.client, Array("GET /bomb HTTP/1.1\r\nHost: x\r\n\r\n".utf8)), (.server, response)])
            .run(segmentSize: 1448, options: options)
        #expect(t.count == 1)
        let r = try #require(t.first?.response)
        #expect(r.body.decodedBytes == 1 << 20)
        #expect(r.body.bytes == UInt64(compressed.count))
        #expect(r.weirds.contains(.bodyDecodeCapped))
    }
}

/// Past 16 MiB, decoding stops when the output passes 256 times the input: a bomb costs
/// milliseconds, not seconds; content that compresses as real content does is decoded whole.
@Suite struct DecompressionRatioTests {
    static func deflate(_ plain: [UInt8]) -> [UInt8] {
        var length = compressBound(uLong(plain.count))
        var out = [UInt8](repeating: 0, count: Int(length))
        _ = compress2(&out, &length, plain, uLong(plain.count), 9)
        return Array(out.prefix(Int(length)))
    }

    static func decodedSize(_ compressed: [UInt8]) throws -> (UInt64, Bool) {
        let decoder = try #require(try ContentDecoder(encodings: ["deflate"], maxOutput: 1 << 30, keepsOutput: false))
        compressed.withUnsafeBytes { raw in
            for start in stride(from: 0, to: raw.count, by: 1448) {
                decoder.feed(UnsafeRawBufferPointer(rebasing: raw[start..<min(raw.count, start + 1448)])) { _ in }
            }
        }
        decoder.finish { _ in }
        return (decoder.decodedCount, decoder.capped)
    }

    @Test func bombStopsAtTheRatio() throws {
        let bomb = Self.deflate([UInt8](repeating: 0, count: 256 << 20))
        let (size, capped) = try Self.decodedSize(bomb)
        #expect(capped)
        #expect(size >= ContentDecoder.ratioFloor && size <= UInt64(bomb.count) * ContentDecoder.maxRatio + ContentDecoder.ratioFloor)
    }

    @Test func repetitiveTextIsDecodedWhole() throws {
        // 40 MiB of log-like lines: about 40 times smaller compressed, decoded to the byte.
        var rng = SplitMix(state: 3)
        var text: [UInt8] = []
        while text.count < 40 << 20 { text += Array("GET /api/v1/items/\(rng.next() % 100_000) 200 OK\n".utf8) }
        let compressed = Self.deflate(text)
        #expect(compressed.count * 256 > text.count)
        let (size, capped) = try Self.decodedSize(compressed)
        #expect(!capped && size == UInt64(text.count))
    }
}
