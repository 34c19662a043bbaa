import Testing
@testable import IcySniffCore

/// TLS metadata from the cleartext handshake, without keys: a TLS 1.3 and a TLS 1.2 handshake
/// built here byte by byte, fed through reassembly and the session at every split.
@Suite struct TLSMetadataTests {
    static func u16(_ v: Int) -> [UInt8] { [UInt8(v >> 8 & 0xFF), UInt8(v & 0xFF)] }
    static func u24(_ v: Int) -> [UInt8] { [UInt8(v >> 16 & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v & 0xFF)] }
    static func ext(_ type: Int, _ data: [UInt8]) -> [UInt8] { u16(type) + u16(data.count) + data }
    static func handshake(_ type: UInt8, _ body: [UInt8]) -> [UInt8] { [type] + u24(body.count) + body }
    static func record(_ type: UInt8, _ body: [UInt8], version: Int = 0x0303) -> [UInt8] { [type] + u16(version) + u16(body.count) + body }

    static func clientHello(sni: String, alpn: [String], earlyData: Bool) -> [UInt8] {
        let name = Array(sni.utf8)
        let serverName = u16(name.count + 3) + [0] + u16(name.count) + name
        let protocols = alpn.flatMap { [UInt8($0.utf8.count)] + Array($0.utf8) }
        var extensions = ext(0, serverName) + ext(16, u16(protocols.count) + protocols) + ext(43, [4, 3, 4, 3, 3])
        if earlyData { extensions += ext(42, []) }
        let body = u16(0x0303) + [UInt8](repeating: 7, count: 32) + [32] + [UInt8](repeating: 9, count: 32)
            + u16(4) + u16(0x1301) + u16(0x1302) + [1, 0] + u16(extensions.count) + extensions
        return handshake(1, body)
    }

    static func serverHello(version: Int, cipher: Int, extensions: [UInt8]) -> [UInt8] {
        let body = u16(0x0303) + [UInt8](repeating: 5, count: 32) + [0] + u16(cipher) + [0] + u16(extensions.count) + extensions
        return handshake(2, body)
    }

    /// Client flight split across two handshake records, then everything through the pipeline
    /// with every block cut into segments of `size` bytes.
    static func run(_ blocks: [(Transcript.Side, [UInt8])], segmentSize: Int) -> TLSInfo? {
        let sink = Transcript(blocks: blocks).collect(segmentSize: segmentSize)
        #expect(sink.transactions.isEmpty, "an encrypted connection gives no transactions")
        return sink.connections.first?.tls
    }

    static let tls13: [(Transcript.Side, [UInt8])] = {
        let hello = clientHello(sni: "www.example.test", alpn: ["h2", "http/1.1"], earlyData: true)
        // The ClientHello cut across two records, as large ones are.
        let cut = hello.count / 2
        let client = record(22, Array(hello[..<cut]), version: 0x0301) + record(22, Array(hello[cut...]))
        let sh = serverHello(version: 0x0304, cipher: 0x1302,
                             extensions: ext(43, u16(0x0304)) + ext(51, u16(0x001D) + u16(32) + [UInt8](repeating: 1, count: 32)))
        let server = record(22, sh) + record(20, [1]) + record(23, [UInt8](repeating: 0xAA, count: 900))
        let finished = record(20, [1]) + record(23, [UInt8](repeating: 0xBB, count: 53))
        let data = record(23, [UInt8](repeating: 0xCC, count: 300))
        return [(.client, client), (.server, server), (.client, finished), (.client, data), (.server, data)]
    }()

    @Test func tls13HandshakeAtEverySplit() throws {
        let whole = try #require(Self.run(Self.tls13, segmentSize: 0))
        #expect(whole.sni == "www.example.test")
        #expect(whole.alpnOffered == ["h2", "http/1.1"])
        #expect(whole.alpn == nil, "encrypted in TLS 1.3")
        #expect(whole.versionName == "TLS 1.3" && whole.cipherName == "TLS_AES_256_GCM_SHA384" && whole.groupName == "x25519")
        #expect(whole.earlyDataOffered && whole.earlyDataAccepted == nil && !whole.resumed && !whole.helloRetry)
        #expect(!whole.incomplete)
        // Transcript sends one block per millisecond: ClientHello at block 1, Finished at block 3.
        #expect(whole.handshakeMilliseconds == 2)
        #expect(whole.applicationBytesFromClient == 58 + 305 && whole.applicationBytesFromServer == 905 + 305)
        for size in [1, 2, 3, 5, 7, 11, 64] {
            let split = try #require(Self.run(Self.tls13, segmentSize: size))
            #expect(split.sni == whole.sni && split.alpnOffered == whole.alpnOffered && split.cipherSuite == whole.cipherSuite
                    && split.group == whole.group && split.version == whole.version && !split.incomplete, "segments of \(size)")
            #expect(split.applicationBytesFromClient == whole.applicationBytesFromClient, "segments of \(size)")
            #expect(split.handshakeStart != nil && split.handshakeEnd != nil, "segments of \(size)")
        }
    }

    /// The ClientHello flight (two records) cut into two segments at every byte boundary.
    @Test func clientHelloSplitAtEveryByte() throws {
        let whole = try #require(Self.run(Self.tls13, segmentSize: 0))
        let flight = Self.tls13[0].1
        for cut in 1..<flight.count {
            let blocks = [(Transcript.Side.client, Array(flight[..<cut])), (.client, Array(flight[cut...]))] + Array(Self.tls13.dropFirst())
            let split = try #require(Self.run(blocks, segmentSize: 0), "cut at \(cut)")
            #expect(split.sni == whole.sni && split.alpnOffered == whole.alpnOffered && split.earlyDataOffered
                    && split.cipherSuite == whole.cipherSuite && split.version == whole.version && !split.incomplete, "cut at \(cut)")
            #expect(split.handshakeStart != nil && split.handshakeEnd != nil, "cut at \(cut)")
        }
    }

    @Test func tls12ResumedBySessionID() throws {
        let hello = Self.clientHello(sni: "api.example.test", alpn: ["http/1.1"], earlyData: false)
        let sh = Self.serverHello(version: 0x0303, cipher: 0xC02F, extensions: Self.ext(16, Self.u16(9) + [8] + Array("http/1.1".utf8)))
        let blocks: [(Transcript.Side, [UInt8])] = [
            (.client, Self.record(22, hello)),
            // Abbreviated: ServerHello, ChangeCipherSpec, Finished (no Certificate).
            (.server, Self.record(22, sh) + Self.record(20, [1]) + Self.record(22, [UInt8](repeating: 0xEE, count: 40))),
            (.client, Self.record(20, [1]) + Self.record(22, [UInt8](repeating: 0xDD, count: 40))),
            (.client, Self.record(23, [UInt8](repeating: 0xCC, count: 100))),
        ]
        let info = try #require(Self.run(blocks, segmentSize: 0))
        #expect(info.versionName == "TLS 1.2" && info.cipherName == "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256")
        #expect(info.alpn == "http/1.1", "in clear in TLS 1.2")
        #expect(info.resumed && info.resumption == "session-id" && info.group == nil)
        #expect(info.earlyDataAccepted == false)
        #expect(info.handshakeMilliseconds == 2, "ClientHello (block 1) to the client's Finished (block 3)")
        for size in 1...9 {
            let split = try #require(Self.run(blocks, segmentSize: size))
            #expect(split == info || (split.resumed && split.alpn == "http/1.1" && split.handshakeEnd != nil), "segments of \(size)")
        }
    }

    @Test func helloRetryIsNamedAndTheSecondServerHelloCounts() throws {
        let hrrRandom: [UInt8] = [0xCF, 0x21, 0xAD, 0x74, 0xE5, 0x9A, 0x61, 0x11, 0xBE, 0x1D, 0x8C, 0x02, 0x1E, 0x65, 0xB8, 0x91,
                                  0xC2, 0xA2, 0x11, 0x16, 0x7A, 0xBB, 0x8C, 0x5E, 0x07, 0x9E, 0x09, 0xE2, 0xC8, 0xA8, 0x33, 0x9C]
        let hrrExtensions = Self.ext(43, Self.u16(0x0304)) + Self.ext(51, Self.u16(0x0018))
        let hrr = Self.handshake(2, Self.u16(0x0303) + hrrRandom + [0] + Self.u16(0x1302) + [0] + Self.u16(hrrExtensions.count) + hrrExtensions)
        let hello = Self.clientHello(sni: "hrr.example.test", alpn: ["h2"], earlyData: false)
        let sh = Self.serverHello(version: 0x0304, cipher: 0x1302,
                                  extensions: Self.ext(43, Self.u16(0x0304)) + Self.ext(51, Self.u16(0x0018) + Self.u16(97) + [UInt8](repeating: 4, count: 97)))
        let blocks: [(Transcript.Side, [UInt8])] = [
            (.client, Self.record(22, hello)), (.server, Self.record(22, hrr)),
            (.client, Self.record(22, hello)), (.server, Self.record(22, sh) + Self.record(23, [1, 2, 3])),
            (.client, Self.record(23, [UInt8](repeating: 1, count: 53))),
        ]
        let info = try #require(Self.run(blocks, segmentSize: 0))
        #expect(info.helloRetry && info.groupName == "secp384r1" && info.versionName == "TLS 1.3")
        #expect(info.handshakeMilliseconds == 4, "from the first ClientHello")
    }

    @Test func notTLSAfterAHandshakeIsFlaggedNotFatal() throws {
        let hello = Self.clientHello(sni: "x.test", alpn: [], earlyData: false)
        let blocks: [(Transcript.Side, [UInt8])] = [
            (.client, Self.record(22, hello)),
            (.server, Array("HTTP/1.1 400 Bad Request\r\n\r\n".utf8)),
        ]
        // The handshake shows what it showed; the server's plain-HTTP answer is the user's
        // (a TLS client sent to an HTTP port): a transaction, flagged (issue 32).
        let sink = Transcript(blocks: blocks).collect()
        let info = try #require(sink.connections.first?.tls)
        #expect(info.sni == "x.test" && info.incomplete && info.handshakeEnd == nil)
        #expect(sink.transactions.map(summary) == ["- -> 400 body=0/0 [tls_answered_in_plain_http]"])
        #expect(sink.connections.first?.weirds.map(\.0).contains(.tlsAnsweredInPlainHTTP) == true)
    }

    @Test func recordRecognition() {
        func looks(_ b: [UInt8], _ type: UInt8?) -> Bool { b.withUnsafeBytes { TLSRecordReader.looksLikeRecord($0, handshakeType: type) } }
        #expect(looks([22, 3, 1, 0, 200, 1], 1))
        #expect(!looks([22, 3, 1, 0, 200, 2], 1))
        #expect(!looks(Array("GET / HTTP/1.1\r\n".utf8), 1))
        #expect(!looks([22, 3, 1, 0xFF, 0xFF, 1], 1), "longer than any record")
        #expect(!looks([22, 3], nil))
    }

    /// A server name and ALPN protocols are the client's bytes: in `--connections` a tab or a
    /// line break cannot shift TSV or CSV columns, and escape sequences do not reach a terminal.
    @Test func namesFromTheWireAreEscapedInConnectionLists() throws {
        let hello = Self.clientHello(sni: "evil\tname\u{1B}[2J,\"x\"", alpn: ["h2\nx"], earlyData: false)
        // TLS 1.2: the ServerHello names the protocol chosen, in the clear.
        let chosen = Array("h2\nx".utf8)
        let serverHello = Self.serverHello(version: 0x0303, cipher: 0xC02F,
                                           extensions: Self.ext(16, Self.u16(chosen.count + 1) + [UInt8(chosen.count)] + chosen))
        let blocks: [(Transcript.Side, [UInt8])] = [(.client, Self.record(22, hello, version: 0x0301)), (.server, Self.record(22, serverHello))]
        func list(_ format: OutputFormat) throws -> [String] {
            let out = OutputFile(memory: true)
            let writer = ConnectionListWriter(output: out, format: format)
            Transcript(blocks: blocks).feed(writer)
            try writer.finish(comment: nil)
            return String(decoding: out.takeBytes(), as: UTF8.self).split(separator: "\n").map(String.init)
        }
        let tsv = try list(.tsv)
        try #require(tsv.count == 2)
        let header = tsv[0].split(separator: "\t", omittingEmptySubsequences: false)
        let row = tsv[1].split(separator: "\t", omittingEmptySubsequences: false)
        #expect(row.count == header.count, "\(tsv)")
        let sni = try #require(header.firstIndex(of: "sni")), alpn = try #require(header.firstIndex(of: "alpn"))
        #expect(row[sni] == "evil\\tname\u{1B}[2J,\"x\"")
        #expect(row[alpn] == "h2\\nx")
        // CSV (RFC 4180): cells with a comma, quote or line break are quoted, quotes doubled.
        let csv = try list(.csv).joined(separator: "\n")
        #expect(csv.contains(",\"evil\tname\u{1B}[2J,\"\"x\"\"\",\"h2\nx\","), "\(csv)")
        let table = try list(.table)
        #expect(table.count == 2, "\(table)")
        #expect(!table.joined().contains("\u{1B}") && table[1].contains("evil?name?[2J"), "\(table)")
    }
}
