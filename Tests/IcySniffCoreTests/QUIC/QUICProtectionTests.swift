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

    /// RFC 9001 A.2: the client's Initial (1,200 bytes; a ClientHello for example.com).
    static let clientInitial = hex(
        "c000000001088394c8f03e5157080000449e7b9aec34d1b1c98dd7689fb8ec11d242b123dc9bd8bab936b47d92ec356c0bab7df5976d27cd449f63300099f3991c260ec4c60d17b31f8429157bb35a1282a643a8d2262cad67500cadb8e7378c8eb7539ec4d4905fed1bee1fc8aafba17c750e2c7ace01e6005f80fcb7df621230c83711b39343fa028cea7f7fb5ff89eac2308249a02252155e2347b63d58c5457afd84d05dfffdb20392844ae812154682e9cf012f9021a6f0be17ddd0c2084dce25ff9b06cde535d0f920a2db1bf362c23e596d11a4f5a6cf3948838a3aec4e15daf8500a6ef69ec4e3feb6b1d98e610ac8b7ec3faf6ad760b7bad1db4ba3485e8a94dc250ae3fdb41ed15fb6a8e5eba0fc3dd60bc8e30c5c4287e53805db059ae0648db2f64264ed5e39be2e20d82df566da8dd5998ccabdae053060ae6c7b4378e846d29f37ed7b4ea9ec5d82e7961b7f25a9323851f681d582363aa5f89937f5a67258bf63ad6f1a0b1d96dbd4faddfcefc5266ba6611722395c906556be52afe3f565636ad1b17d508b73d8743eeb524be22b3dcbc2c7468d54119c7468449a13d8e3b95811a198f3491de3e7fe942b330407abf82a4ed7c1b311663ac69890f4157015853d91e923037c227a33cdd5ec281ca3f79c44546b9d90ca00f064c99e3dd97911d39fe9c5d0b23a229a234cb36186c4819e8b9c5927726632291d6a418211cc2962e20fe47feb3edf330f2c603a9d48c0fcb5699dbfe5896425c5bac4aee82e57a85aaf4e2513e4f05796b07ba2ee47d80506f8d2c25e50fd14de71e6c418559302f939b0e1abd576f279c4b2e0feb85c1f28ff18f58891ffef132eef2fa09346aee33c28eb130ff28f5b766953334113211996d20011a198e3fc433f9f2541010ae17c1bf202580f6047472fb36857fe843b19f5984009ddc324044e847a4f4a0ab34f719595de37252d6235365e9b84392b061085349d73203a4a13e96f5432ec0fd4a1ee65accdd5e3904df54c1da510b0ff20dcc0c77fcb2c0e0eb605cb0504db87632cf3d8b4dae6e705769d1de354270123cb11450efc60ac47683d7b8d0f811365565fd98c4c8eb936bcab8d069fc33bd801b03adea2e1fbc5aa463d08ca19896d2bf59a071b851e6c239052172f296bfb5e72404790a2181014f3b94a4e97d117b438130368cc39dbb2d198065ae3986547926cd2162f40a29f0c3c8745c0f50fba3852e566d44575c29d39a03f0cda721984b6f440591f355e12d439ff150aab7613499dbd49adabc8676eef023b15b65bfc5ca06948109f23f350db82123535eb8a7433bdabcb909271a6ecbcb58b936a88cd4e8f2e6ff5800175f113253d8fa9ca8885c2f552e657dc603f252e1a8e308f76f0be79e2fb8f5d5fbbe2e30ecadd220723c8c0aea8078cdfcb3868263ff8f0940054da48781893a7e49ad5aff4af300cd804a6b6279ab3ff3afb64491c85194aab760d58a606654f9f4400e8b38591356fbf6425aca26dc85244259ff2b19c41b9f96f3ca9ec1dde434da7d2d392b905ddf3d1f9af93d1af5950bd493f5aa731b4056df31bd267b6b90a079831aaf579be0a39013137aac6d404f518cfd46840647e78bfe706ca4cf5e9c5453e9f7cfd2b8b4c8d169a44e55c88d4a9a7f9474241e221af44860018ab0856972e194cd934")
    /// RFC 9001 A.4: the server's Retry to that Initial.
    static let retry = hex("ff000000010008f067a5502a4262b5746f6b656e04a265ba2eff4d829058fb3f0f2496ba")

    @Test func v1ClientInitial() throws {
        let version = try #require(QUICVersion(QUICVersion.v1))
        let keys = try #require(QUICPacketKeys.initial(dcid: Self.dcid, version: version, server: false))
        #expect(Self.clientInitial.count == 1200)
        let opened = try #require(Self.unprotect(Self.clientInitial, pnOffset: 18, keys: keys))
        #expect(opened.header == Self.hex("c300000001088394c8f03e5157080000449e00000002"))
        // A CRYPTO frame at offset 0 holding the ClientHello, then PADDING to the end.
        #expect(Array(opened.payload.prefix(44)) == Self.hex("060040f1010000ed0303ebf8fa56f12939b9584a3896472ec40bb863cfd3e86804fe3a47f06a2b69484c0000"))
        #expect(opened.payload.count == 1200 - 22 - 16)
        #expect(opened.payload[(4 + 0xf1)...].allSatisfy { $0 == 0 })
    }

    /// Through the pipeline: the client Initial is a QUIC connection whose ClientHello names
    /// example.com; the Retry that answers it is noted.
    @Test func clientInitialAndRetryThroughThePipeline() throws {
        let client = Endpoint(address: IPAddress(ipv4: 0x0A00_0002), port: 50000)
        let server = Endpoint(address: IPAddress(ipv4: 0x0A00_0001), port: 443)
        let sink = CollectingSink()
        let pipeline = Pipeline(sink: sink)
        for (bytes, fromClient, ms) in [(Self.clientInitial, true, Int64(0)), (Self.retry, false, 1)] {
            bytes.withUnsafeBytes {
                pipeline.ingest(UDPDatagram(source: fromClient ? client : server, destination: fromClient ? server : client, payload: $0,
                                            timestamp: Timestamp(nanoseconds: 1_600_000_000_000_000_000 + ms * 1_000_000)))
            }
        }
        pipeline.finish()
        let c = try #require(sink.connections.first)
        #expect(c.tls?.sni == "example.com" && c.tls?.alpnOffered == ["alpn"])
        #expect(c.quic?.cids.originalDCID == Self.dcid && c.quic?.cids.clientCID == [] && c.quic?.retry == true)
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
