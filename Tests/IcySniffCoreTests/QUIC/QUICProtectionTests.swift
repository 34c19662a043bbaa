import Testing
@testable import IcySniffCore

/// QUIC packet protection against the published vectors, byte for byte: RFC 9001 Appendix A
/// (QUIC v1: the server's Initial, the ChaCha20-Poly1305 short header and its key update) and
/// RFC 9369 Appendix A (QUIC v2: the server's Initial), all derived from the client's first
/// Destination Connection ID 0x8394c8f03e515708.
@Suite struct QUICProtectionTests {
    static let dcid = hex("8394c8f03e515708")
    /// RFC 9001 A.3 / RFC 9369 A.3: the server's Initial payload (an ACK and the ServerHello).
    static let serverPayload = hex("02000000000600405a020000560303eefce7f7b37ba1d1632e96677825ddf73988cfc79825df566dc5430b9a045a12"
                                   + "00130100002e00330024001d00209d3c940d89690b84d08a60993c144eca684d1081287c834d5311bcf32bb9da1a002b00020304")

    static func hex(_ s: String) -> [UInt8] { KeyLog.hex(Array(s.utf8)[...])! }

    /// Removes header protection from a long-header packet and opens it, as the QUIC stage does:
    /// the unprotected header and the payload.
    static func unprotect(_ packet: [UInt8], pnOffset: Int, keys: QUICPacketKeys, longHeader: Bool = true,
                          packetNumber: (UInt64) -> UInt64 = { $0 }) -> (header: [UInt8], payload: [UInt8])? {
        var header = Array(packet[0..<(pnOffset + 4)])
        let mask = packet.withUnsafeBytes { keys.mask(UnsafeRawBufferPointer(rebasing: $0[(pnOffset + 4)..<(pnOffset + 20)])) }
        guard let mask else { return nil }
        header[0] ^= mask.0 & (longHeader ? 0x0f : 0x1f)
        let pnLength = Int(header[0] & 3) + 1
        let m = [mask.1, mask.2, mask.3, mask.4]
        var truncated: UInt64 = 0
        for k in 0..<pnLength {
            header[pnOffset + k] ^= m[k]
            truncated = truncated << 8 | UInt64(header[pnOffset + k])
        }
        header = Array(header[0..<(pnOffset + pnLength)])
        let sealed = Array(packet[(pnOffset + pnLength)...])
        var out = [UInt8](repeating: 0, count: sealed.count)
        let n = header.withUnsafeBytes { h in
            sealed.withUnsafeBytes { s in
                out.withUnsafeMutableBytes { o in keys.open(packetNumber: packetNumber(truncated), header: h, sealed: s, into: o) }
            }
        }
        guard let n else { return nil }
        return (header, Array(out[0..<n]))
    }

    @Test func v1ServerInitial() throws {
        let version = try #require(QUICVersion(QUICVersion.v1))
        let keys = try #require(QUICPacketKeys.initial(dcid: Self.dcid, version: version, server: true))
        let packet = Self.hex("cf000000010008f067a5502a4262b5004075c0d95a482cd0991cd25b0aac406a5816b6394100f37a1c69797554780bb38cc5a99f5ede4cf73c3ec2493a1839b3"
                              + "dbcba3f6ea46c5b7684df3548e7ddeb9c3bf9c73cc3f3bded74b562bfb19fb84022f8ef4cdd93795d77d06edbb7aaf2f58891850abbdca3d20398c276456cbc4"
                              + "2158407dd074ee")
        let opened = try #require(Self.unprotect(packet, pnOffset: 18, keys: keys))
        #expect(opened.header == Self.hex("c1000000010008f067a5502a4262b50040750001"))
        #expect(opened.payload == Self.serverPayload)
        // The client's keys do not open the server's packet: a wrong key is refused, not guessed.
        let clientKeys = try #require(QUICPacketKeys.initial(dcid: Self.dcid, version: version, server: false))
        #expect(Self.unprotect(packet, pnOffset: 18, keys: clientKeys) == nil)
    }

    @Test func v2ServerInitial() throws {
        let version = try #require(QUICVersion(QUICVersion.v2))
        let keys = try #require(QUICPacketKeys.initial(dcid: Self.dcid, version: version, server: true))
        let packet = Self.hex("dc6b3343cf0008f067a5502a4262b5004075d92faaf16f05d8a4398c47089698baeea26b91eb761d9b89237bbf87263017915358230035f7fd3945d88965cf17"
                              + "f9af6e16886c61bfc703106fbaf3cb4cfa52382dd16a393e42757507698075b2c984c707f0a0812d8cd5a6881eaf21ceda98f4bd23f6fe1a3e2c43edd9ce7ca8"
                              + "4bed8521e2e140")
        let opened = try #require(Self.unprotect(packet, pnOffset: 18, keys: keys))
        #expect(opened.header == Self.hex("d16b3343cf0008f067a5502a4262b50040750001"))
        #expect(opened.payload == Self.serverPayload)
        // v2's long header type bits: 0b01 is Initial (RFC 9369 §3.2), which v1 reads as 0-RTT.
        #expect(version.packetType((0xd1 >> 4) & 3) == .initial)
        #expect(QUICVersion(QUICVersion.v1)!.packetType((0xd1 >> 4) & 3) == .zeroRTT)
    }

    @Test func chaChaShortHeaderAndKeyUpdate() throws {
        let version = try #require(QUICVersion(QUICVersion.v1))
        let suite = try #require(TLSCipherParameters(suite: 0x1303))
        let keys = try #require(QUICPacketKeys(secret: Self.hex("9ac312a7f877468ebe69422748ad00a15443f18203a07d6060f688f30f21632b"),
                                               cipher: suite, version: version))
        let packet = Self.hex("4cfe4189655e5cd55c41f69080575d7999c25a5bfb")
        // A zero-length DCID: the packet number starts at byte 1; the largest seen was 654360563.
        let opened = try #require(Self.unprotect(packet, pnOffset: 1, keys: keys, longHeader: false) {
            decodePacketNumber(largest: 654_360_563, truncated: $0, bits: 24)
        })
        #expect(opened.header == Self.hex("4200bff4"))
        #expect(opened.payload == [0x01])
        // RFC 9001 A.5: the next key phase's secret ("quic ku").
        #expect(keys.next()?.secret == Self.hex("1223504755036d556342ee9361d253421a826c9ecdf3c7148684b36b714881f9"))
    }

    /// RFC 9000 Appendix A.3's example, and the window's edges.
    @Test func packetNumbers() {
        #expect(decodePacketNumber(largest: 0xa82f30ea, truncated: 0x9b32, bits: 16) == 0xa82f9b32)
        #expect(decodePacketNumber(largest: nil, truncated: 0, bits: 8) == 0)
        #expect(decodePacketNumber(largest: 0xff, truncated: 0x01, bits: 8) == 0x101)
        #expect(decodePacketNumber(largest: 0x101, truncated: 0xff, bits: 8) == 0xff)
    }
}

/// `OffsetReassembler`: ranges out of order, repeated and overlapping come out once, in order;
/// holes are declared only when asked.
@Suite struct OffsetReassemblerTests {
    @Test(arguments: [[0, 1, 2, 3], [3, 2, 1, 0], [2, 0, 3, 1], [1, 3, 0, 2, 1, 3]])
    func anyOrder(_ order: [Int]) {
        let data = Array(0..<40).map(UInt8.init)
        var r = OffsetReassembler()
        var out: [UInt8] = []
        for i in order {
            // Ranges of 10 bytes overlapping their neighbours by 2.
            let start = max(0, i * 10 - 2), end = min(40, i * 10 + 10)
            Array(data[start..<end]).withUnsafeBytes { r.insert($0, at: UInt64(start), deliver: { out += $0 }, lost: { _ in Issue.record("lost") }) }
        }
        #expect(out == data)
        #expect(!r.hasPending && r.delivered == 40)
    }

    @Test func holesAtTheEnd() {
        var r = OffsetReassembler()
        var out: [UInt8] = []
        var lost: UInt64 = 0
        [UInt8](repeating: 7, count: 5).withUnsafeBytes { r.insert($0, at: 10, deliver: { out += $0 }, lost: { lost += $0 }) }
        #expect(out.isEmpty)
        r.skipHoles(deliver: { out += $0 }, lost: { lost += $0 })
        #expect(out.count == 5 && lost == 10 && r.delivered == 15)
    }
}
