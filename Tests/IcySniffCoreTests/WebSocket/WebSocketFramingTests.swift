import CZlib
import Testing
@testable import IcySniffCore

/// Builds WebSocket frames (RFC 6455 §5.2) and permessage-deflate payloads (RFC 7692 §7.2.1:
/// zlib's raw DEFLATE, flushed with Z_SYNC_FLUSH, the trailing 00 00 FF FF removed).
enum WS {
    static func frame(_ opcode: UInt8, _ payload: [UInt8], fin: Bool = true, rsv1: Bool = false, mask: [UInt8]? = nil) -> [UInt8] {
        var out: [UInt8] = [(fin ? 0x80 : 0) | (rsv1 ? 0x40 : 0) | opcode]
        let m: UInt8 = mask == nil ? 0 : 0x80
        if payload.count < 126 {
            out.append(m | UInt8(payload.count))
        } else if payload.count < 65_536 {
            out += [m | 126, UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)]
        } else {
            out.append(m | 127)
            for shift in stride(from: 56, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: payload.count >> shift)) }
        }
        guard let mask else { return out + payload }
        out += mask
        return out + payload.enumerated().map { $0.element ^ mask[$0.offset & 3] }
    }

    static let key: [UInt8] = [0x37, 0xFA, 0x21, 0x3D]

    static func handshake(extensions: String?) -> [(Transcript.Side, [UInt8])] {
        let ext = extensions.map { "Sec-WebSocket-Extensions: \($0)\r\n" } ?? ""
        return [
            (.client, Array("GET /socket HTTP/1.1\r\nHost: ws.test\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n".utf8)),
            (.server, Array("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\(ext)\r\n".utf8)),
        ]
    }
}

/// One direction's permessage-deflate compressor, with or without context takeover.
final class MessageDeflater {
    private var z = z_stream()
    private let takeover: Bool

    init(takeover: Bool = true) {
        self.takeover = takeover
        deflateInit2_(&z, 6, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY, ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size))
    }
    deinit { deflateEnd(&z) }

    func compress(_ text: String) -> [UInt8] {
        var input = Array(text.utf8)
        var out = [UInt8](repeating: 0, count: input.count + 64)
        input.withUnsafeMutableBufferPointer { i in
            out.withUnsafeMutableBufferPointer { o in
                z.next_in = i.baseAddress; z.avail_in = UInt32(i.count)
                z.next_out = o.baseAddress; z.avail_out = UInt32(o.count)
                deflate(&z, Z_SYNC_FLUSH)
            }
        }
        let n = out.count - Int(z.avail_out)
        if !takeover { deflateReset(&z) }
        return Array(out[..<(n - 4)])   // without 00 00 FF FF
    }
}

/// The WebSocket stage through the whole pipeline (reassembly, HTTP/1.1 upgrade, frames):
/// fragmented and masked messages with a ping between fragments, compressed messages that refer
/// to earlier ones, cut into TCP segments of every size; then gaps, framing errors and the caps.
@Suite struct WebSocketFramingTests {
    static func describe(_ t: Transaction?) -> [String] {
        (t?.webSocket?.messages ?? []).map { m in
            let data = m.data.map { m.opcode == 1 ? String(decoding: $0.prefix(40), as: UTF8.self) : "\($0.count) bytes" } ?? "-"
            return "\(m.fromClient ? ">" : "<") \(m.opcode) \(m.size) \(data)\(m.problem.map { " [\($0.rawValue)]" } ?? "")"
        }
    }

    static var keeping: HTTPParserOptions {
        var o = HTTPParserOptions()
        o.webSocket.keptBytes = 1 << 20
        return o
    }

    static func conversation(takeover: Bool = true) -> [(Transcript.Side, [UInt8])] {
        let client = MessageDeflater(takeover: takeover), server = MessageDeflater(takeover: takeover)
        let ext = takeover ? "permessage-deflate" : "permessage-deflate; server_no_context_takeover; client_no_context_takeover"
        var blocks = WS.handshake(extensions: ext)
        blocks.append((.client, WS.frame(1, client.compress("hello, hello, hello"), rsv1: true, mask: WS.key)))
        blocks.append((.server, WS.frame(1, server.compress("hello, hello, hello"), rsv1: true)))
        blocks.append((.client, WS.frame(1, client.compress("hello, hello, hello"), rsv1: true, mask: WS.key)))
        // A fragmented text message with a ping between its fragments (§5.4), uncompressed.
        blocks.append((.client, WS.frame(1, Array("frag".utf8), fin: false, mask: WS.key)
                       + WS.frame(9, Array("ping".utf8), mask: WS.key)
                       + WS.frame(0, Array("ment".utf8), mask: [1, 2, 3, 4])))
        blocks.append((.server, WS.frame(0xA, Array("ping".utf8)) + WS.frame(2, Array(repeating: 7, count: 300))))
        blocks.append((.client, WS.frame(1, Array(String(repeating: "long ", count: 20_000).utf8), mask: WS.key)))
        blocks.append((.server, WS.frame(8, [0x03, 0xE8] + Array("done".utf8))))
        blocks.append((.client, WS.frame(8, [0x03, 0xE8], mask: WS.key)))
        return blocks
    }

    static let expected = [
        "> 1 19 hello, hello, hello", "< 1 19 hello, hello, hello", "> 1 19 hello, hello, hello",
        "> 1 8 fragment", "< 2 300 300 bytes", "> 1 100000 " + String(repeating: "long ", count: 8),
    ]

    @Test(arguments: [true, false])
    func messagesAreTheSameWhateverTheSegmenting(takeover: Bool) throws {
        for size in [0, 1, 2, 3, 5, 7, 13, 64, 1000] {
            let t = Transcript(blocks: Self.conversation(takeover: takeover)).run(segmentSize: size, options: Self.keeping)
            let ws = try #require(t.first?.webSocket, "segments of \(size)")
            #expect(Self.describe(t.first) == Self.expected, "segments of \(size)")
            #expect(ws.sent.pings == 1 && ws.received.pongs == 1)
            #expect(ws.closeCode == 1000 && ws.closeReason == "done" && ws.closedByClient == false)
            #expect(ws.sent.messages == 4 && ws.received.messages == 2 && ws.sent.bytes == 19 * 2 + 8 + 100_000)
            #expect(t.first?.allWeirds.filter { $0.rawValue.hasPrefix("websocket") } == [])
        }
    }

    @Test func withoutKeptDataOnlySizesAreListed() throws {
        let t = Transcript(blocks: Self.conversation()).run()
        #expect(Self.describe(t.first).map { $0.split(separator: " ").prefix(3).joined(separator: " ") }
                == Self.expected.map { $0.split(separator: " ").prefix(3).joined(separator: " ") })
        #expect(t.first?.webSocket?.messages.allSatisfy { $0.data == nil } == true)
    }

    /// Blocks with the first compressed message's payload cut in two, its second half lost.
    static func withLostPayload(takeover: Bool) -> Transcript {
        var blocks = conversation(takeover: takeover)
        let first = blocks[2].1
        blocks[2].1 = Array(first[..<(first.count - 5)])
        blocks.insert((.client, Array(first[(first.count - 5)...])), at: 3)
        var transcript = Transcript(blocks: blocks)
        transcript.lostBlocks = [3]
        return transcript
    }

    @Test func aGapInAPayloadLeavesThatMessageIncompleteAndTheContextUnknown() throws {
        let t = try #require(Self.withLostPayload(takeover: true).run(options: Self.keeping).first)
        let client = Self.describe(t).filter { $0.hasPrefix(">") }
        let ws = try #require(t.webSocket)
        #expect(client.first?.hasSuffix("[incomplete]") == true, "\(client)")
        // The client's next compressed message refers to the lost bytes' window: not guessed,
        // its size the compressed one.
        let second = try #require(ws.messages.filter(\.fromClient).dropFirst().first)
        #expect(client[1] == "> 1 \(second.wireSize)  [not_inflated]", "\(client)")
        #expect(Array(client[2...]) == Self.expected.filter { $0.hasPrefix(">") }.suffix(2), "uncompressed messages after it are read")
        #expect(Self.describe(t).filter { $0.hasPrefix("<") } == Self.expected.filter { $0.hasPrefix("<") })
        #expect(t.allWeirds.contains(.websocketNotInflated))
        #expect(ws.messages.map(\.time) == ws.messages.map(\.time).sorted(), "listed in the order they began")
        // Without context takeover each message inflates on its own: only the cut one suffers.
        let fresh = try #require(Self.withLostPayload(takeover: false).run(options: Self.keeping).first)
        let freshClient = Self.describe(fresh).filter { $0.hasPrefix(">") }
        #expect(freshClient.first?.hasSuffix("[incomplete]") == true)
        #expect(Array(freshClient.dropFirst()) == Array(Self.expected.filter { $0.hasPrefix(">") }.dropFirst()))
    }

    @Test func aGapAcrossAFrameHeaderEndsThatDirection() throws {
        var transcript = Transcript(blocks: Self.conversation())
        transcript.lostBlocks = [4]   // the client's second compressed message, header and all
        let t = try #require(transcript.run(options: Self.keeping).first)
        #expect(t.allWeirds.contains(.websocketFramingLost))
        #expect(Self.describe(t).filter { $0.hasPrefix(">") } == ["> 1 19 hello, hello, hello"])
        #expect(Self.describe(t).filter { $0.hasPrefix("<") } == Self.expected.filter { $0.hasPrefix("<") }, "the server's side goes on")
        #expect(t.webSocket?.closedByClient == false, "the server's close is still read")
    }

    @Test func framesThatBreakTheRulesAreNamedAndSkipped() throws {
        var blocks = WS.handshake(extensions: nil)
        blocks.append((.client, WS.frame(3, Array("reserved".utf8), mask: WS.key)   // a reserved opcode
                       + WS.frame(0, Array("stray".utf8), mask: WS.key)             // a continuation of nothing
                       + WS.frame(1, Array("ok".utf8), mask: WS.key)))
        blocks.append((.server, WS.frame(1, Array("compressed?".utf8), rsv1: true)))  // RSV1 without the extension
        let t = try #require(Transcript(blocks: blocks).run(options: Self.keeping).first)
        #expect(t.allWeirds.contains(.websocketMalformedFrame))
        #expect(Self.describe(t) == ["> 1 2 ok", "< 1 11  [not_inflated]"])
    }

    /// RFC 6455 §5.1: a client masks every frame, a server none. Either broken is named, counted
    /// on the connection (the summary line counts there), and the frame still read.
    @Test func framesMaskedTheWrongWayAreNamedAndRead() throws {
        var blocks = WS.handshake(extensions: nil)
        blocks.append((.client, WS.frame(1, Array("bare".utf8)) + WS.frame(1, Array("fine".utf8), mask: WS.key)))
        blocks.append((.server, WS.frame(1, Array("hidden".utf8), mask: WS.key)))
        let sink = Transcript(blocks: blocks).collect(options: Self.keeping)
        let t = try #require(sink.transactions.first)
        #expect(t.allWeirds.contains(.websocketClientFrameUnmasked) && t.allWeirds.contains(.websocketServerFrameMasked))
        #expect(Self.describe(t) == ["> 1 4 bare", "> 1 4 fine", "< 1 6 hidden"])
        let counted = Dictionary(uniqueKeysWithValues: try #require(sink.connections.first).weirds)
        #expect(counted[.websocketClientFrameUnmasked] == 1 && counted[.websocketServerFrameMasked] == 1, "\(counted)")
        // Masked the right way: nothing named.
        var good = WS.handshake(extensions: nil)
        good.append((.client, WS.frame(1, Array("fine".utf8), mask: WS.key)))
        good.append((.server, WS.frame(1, Array("fine".utf8))))
        #expect(try #require(Transcript(blocks: good).run(options: Self.keeping).first).allWeirds.filter { $0.rawValue.hasPrefix("websocket") } == [])
    }

    @Test func messagesPastTheCapAreCountedNotListed() throws {
        var options = Self.keeping
        options.webSocket.maxMessages = 2
        let t = try #require(Transcript(blocks: Self.conversation()).run(options: options).first)
        let ws = try #require(t.webSocket)
        #expect(ws.messages.count == 2 && ws.dropped == 4)
        #expect(ws.sent.messages + ws.received.messages == 6, "counts stay exact")
        #expect(t.allWeirds.contains(.websocketMessagesCapped))
    }

    /// RFC 8441: a WebSocket over an HTTP/2 stream opened by an extended CONNECT; its DATA
    /// frames carry the WebSocket frames (cut anywhere across them).
    @Test func overHTTP2ExtendedConnect() throws {
        let c = HPACKEncoder(), s = HPACKEncoder()
        let client = MessageDeflater(), server = MessageDeflater()
        let toServer = WS.frame(1, client.compress("over h2"), rsv1: true, mask: WS.key) + WS.frame(2, [1, 2, 3], mask: WS.key)
        let toClient = WS.frame(1, server.compress("over h2"), rsv1: true) + WS.frame(8, [0x03, 0xE9])
        let blocks: [(Transcript.Side, [UInt8])] = [
            (.client, HTTP2FrameHeader.preface + H2.settings()
                + H2.frame(.headers, flags: H2.endHeaders, stream: 1,
                           c.encode([(":method", "CONNECT"), (":protocol", "websocket"), (":scheme", "https"),
                                     (":authority", "ws.test"), (":path", "/chat"), ("sec-websocket-version", "13"),
                                     ("sec-websocket-extensions", "permessage-deflate")]))),
            (.server, H2.settings([(8, 1)]) + H2.frame(.headers, flags: H2.endHeaders, stream: 1,
                                                     s.encode([(":status", "200"), ("sec-websocket-extensions", "permessage-deflate")]))),
            (.client, H2.frame(.data, stream: 1, Array(toServer[..<5])) + H2.frame(.data, flags: H2.endStream, stream: 1, Array(toServer[5...]))),
            (.server, H2.frame(.data, flags: H2.endStream, stream: 1, toClient)),
        ]
        let t = try #require(Transcript(blocks: blocks).run(options: Self.keeping).first)
        #expect(Self.describe(t) == ["> 1 7 over h2", "> 2 3 3 bytes", "< 1 7 over h2"])
        #expect(t.webSocket?.closeCode == 1001 && t.webSocket?.closedByClient == false)
    }
}
