import Foundation
import Testing

/// TLS connections damaged as mutated captures damage them (issue 31, item 10) lose what they
/// lose out loud: a record header with an impossible length, a capture cut inside a record, a
/// ServerHello choosing a suite icy-sniff cannot decrypt each name an anomaly on the connection.
@Suite struct TLSDamageTests {
    static func sample() throws -> [UInt8] { Array(try Data(contentsOf: URL(fileURLWithPath: CLI.capture("tls-sample.pcap")))) }

    /// Where `pattern` first occurs in `bytes` after `from`.
    static func find(_ pattern: [UInt8], in bytes: [UInt8], from: Int = 24) -> Int? {
        guard bytes.count >= pattern.count else { return nil }
        for i in from...(bytes.count - pattern.count) where bytes[i] == pattern[0] && Array(bytes[i..<(i + pattern.count)]) == pattern { return i }
        return nil
    }

    static func anomalies(_ bytes: [UInt8], keys: Bool = false) throws -> (String, String) {
        let dir = CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("mutated.pcap")
        try Data(bytes).write(to: file)
        let r = try CLI.run(["-r", file.path, "--connections", "--format", "ndjson"] + (keys ? ["--keylog", CLI.capture("tls-sample.keys")] : []))
        return (r.text, r.stderr)
    }

    @Test func anImpossibleRecordLengthIsNamed() throws {
        var bytes = try Self.sample()
        let at = try #require(Self.find([0x17, 0x03, 0x03], in: bytes))
        bytes[at + 3] = 0xFF
        bytes[at + 4] = 0xFF
        let (out, err) = try Self.anomalies(bytes)
        #expect(out.contains("tls_record_framing_lost") && err.contains("tls_record_framing_lost×1"), "\(err)")
    }

    /// The last application-data record says it is 200 bytes longer than it is: the connection
    /// ends inside it. (A capture whose last packet is cut short is a gap instead, named
    /// tls_record_framing_lost with content_gap.)
    @Test func aStreamEndingInsideARecordIsNamed() throws {
        var bytes = try Self.sample()
        var last: Int? = nil
        var from = 24
        while let at = Self.find([0x17, 0x03, 0x03], in: bytes, from: from) { last = at; from = at + 1 }
        let at = try #require(last)
        let length = (Int(bytes[at + 3]) << 8 | Int(bytes[at + 4])) + 200
        bytes[at + 3] = UInt8(length >> 8)
        bytes[at + 4] = UInt8(length & 0xFF)
        let (out, err) = try Self.anomalies(bytes)
        #expect(out.contains("tls_record_cut") && err.contains("tls_record_cut×1"), "\(out) \(err)")
    }

    @Test func anUnsupportedSuiteIsNamedWhenAKeyLogIsGiven() throws {
        var bytes = try Self.sample()
        // The first ServerHello: record header, handshake type 2, length, version, random,
        // session id, then the suite.
        let at = try #require(Self.find([0x16, 0x03, 0x03], in: bytes, from: Self.find([0x16, 0x03, 0x01], in: bytes)! + 5))
        #expect(bytes[at + 5] == 2, "a ServerHello")
        let sessionIDLength = Int(bytes[at + 5 + 4 + 2 + 32])
        let suite = at + 5 + 4 + 2 + 32 + 1 + sessionIDLength
        bytes[suite] = 0xC0
        bytes[suite + 1] = 0xAC     // TLS_ECDHE_ECDSA_WITH_AES_128_CCM: not decrypted
        let (out, err) = try Self.anomalies(bytes, keys: true)
        #expect(out.contains("tls_cipher_unsupported") && err.contains("tls_cipher_unsupported×1"), "\(err)")
        let (plain, _) = try Self.anomalies(bytes)
        #expect(!plain.contains("tls_cipher_unsupported"), "without a key log there is nothing to say")
    }

    /// A TLS client sent to a plain HTTP port (issue 32): nginx answers the ClientHello with a
    /// 400 in clear. That answer is what the user needs to see; it was lost (the connection was
    /// taken as TLS, its framing lost) and the summary advised a key log.
    @Test func aClientHelloAnsweredInPlainHTTPShowsTheAnswer() throws {
        let capture = CLI.packageRoot.appendingPathComponent("Tests/Fixtures/tls/tls-client-plain-server.pcap").path
        let r = try CLI.run(["-r", capture, "--format", "tsv", "--fields", "method,status,size,flags"])
        #expect(r.status == 0, "\(r.stderr)")
        let rows = r.text.split(separator: "\n").dropFirst().map { $0.split(separator: "\t", omittingEmptySubsequences: false).map(String.init) }
        #expect(rows.count == 2)
        #expect(rows.first == ["", "400", "157", "tls_answered_in_plain_http"], "\(rows)")
        #expect(rows.last?.prefix(2) == ["GET", "200"])
        #expect(!r.stderr.contains("encrypted") && !r.stderr.contains("TLS connection"), "\(r.stderr)")
        #expect(!r.stderr.contains("tls_record_framing_lost"), "\(r.stderr)")
    }
}
