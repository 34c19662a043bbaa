import Foundation
import Testing

/// pcapng read by icy-sniff's own block reader (issue 18; the TLS issue's Decryption Secrets
/// Blocks): files written here block by block from the records of captures/ (pcapng spec,
/// draft-ietf-opsawg-pcapng), compared with the classic pcap they came from.
@Suite struct PcapngTests {
    /// The records of a little-endian classic pcap (microseconds): timestamp and bytes.
    static func records(_ path: String) throws -> [(seconds: UInt32, micros: UInt32, data: Data)] {
        let d = try Data(contentsOf: URL(fileURLWithPath: path))
        func u32(_ at: Int) -> UInt32 { d[d.startIndex + at..<d.startIndex + at + 4].enumerated().reduce(0) { $0 | UInt32($1.element) << (8 * $1.offset) } }
        try #require(u32(0) == 0xa1b2c3d4, "a little-endian microsecond pcap")
        var out: [(UInt32, UInt32, Data)] = []
        var at = 24
        while at + 16 <= d.count {
            let length = Int(u32(at + 8))
            out.append((u32(at), u32(at + 4), d.subdata(in: d.startIndex + at + 16..<d.startIndex + at + 16 + length)))
            at += 16 + length
        }
        return out
    }

    /// pcapng blocks, little-endian unless said otherwise.
    struct Writer {
        var bytes = Data()
        var bigEndian = false

        mutating func u32(_ v: UInt32, into d: inout Data) { withUnsafeBytes(of: bigEndian ? v.bigEndian : v.littleEndian) { d.append(contentsOf: $0) } }
        mutating func u16(_ v: UInt16, into d: inout Data) { withUnsafeBytes(of: bigEndian ? v.bigEndian : v.littleEndian) { d.append(contentsOf: $0) } }

        mutating func block(_ type: UInt32, _ body: Data) {
            var body = body
            body.append(contentsOf: [UInt8](repeating: 0, count: (4 - body.count % 4) % 4))
            var d = Data()
            u32(type, into: &d); u32(UInt32(12 + body.count), into: &d)
            d.append(body)
            u32(UInt32(12 + body.count), into: &d)
            bytes.append(d)
        }

        mutating func section() {
            var b = Data()
            u32(0x1A2B3C4D, into: &b); u16(1, into: &b); u16(0, into: &b)
            b.append(contentsOf: [UInt8](repeating: 0xff, count: 8))
            block(0x0A0D0D0A, b)
        }

        mutating func interface(dlt: UInt16) {
            var b = Data()
            u16(dlt, into: &b); u16(0, into: &b); u32(262_144, into: &b)
            block(1, b)
        }

        mutating func packet(interface: UInt32 = 0, seconds: UInt32, micros: UInt32, _ data: Data) {
            let units = UInt64(seconds) * 1_000_000 + UInt64(micros)
            var b = Data()
            u32(interface, into: &b); u32(UInt32(units >> 32), into: &b); u32(UInt32(units & 0xffff_ffff), into: &b)
            u32(UInt32(data.count), into: &b); u32(UInt32(data.count), into: &b)
            b.append(data)
            block(6, b)
        }

        mutating func secrets(_ text: String) {
            var b = Data()
            u32(0x544C_534B, into: &b); u32(UInt32(text.utf8.count), into: &b)
            b.append(Data(text.utf8))
            block(0x0A, b)
        }
    }

    static func write(_ w: Writer, _ name: String, in dir: URL) throws -> String {
        let path = dir.appendingPathComponent(name).path
        try w.bytes.write(to: URL(fileURLWithPath: path))
        return path
    }

    /// The key log embedded after the first packet (not before it, where editcap puts it) still
    /// decrypts everything after it, as `--keylog` does; no key material is printed.
    @Test func decryptionSecretsBlockAnywhereDecrypts() throws {
        let dir = CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let keys = try String(contentsOfFile: CLI.capture("tls-sample.keys"), encoding: .utf8)
        var w = Writer()
        w.section(); w.interface(dlt: 1)
        for (i, r) in try Self.records(CLI.capture("tls-sample.pcap")).enumerated() {
            w.packet(seconds: r.seconds, micros: r.micros, r.data)
            if i == 0 { w.secrets(keys) }
        }
        let path = try Self.write(w, "secrets.pcapng", in: dir)
        let embedded = try CLI.run(["-r", path, "--format", "ndjson"])
        let withOption = try CLI.run(["-r", CLI.capture("tls-sample.pcap"), "--keylog", CLI.capture("tls-sample.keys"), "--format", "ndjson"])
        #expect(embedded.status == 0, "\(embedded.stderr)")
        let decrypted = withOption.text.split(separator: "\n").count
        #expect(decrypted >= 2)
        #expect(embedded.text.replacingOccurrences(of: path, with: "X") == withOption.text.replacingOccurrences(of: CLI.capture("tls-sample.pcap"), with: "X"))
        for line in keys.split(separator: "\n") where !line.hasPrefix("#") {
            if let secret = line.split(separator: " ").last { #expect(!embedded.text.contains(secret) && !embedded.stderr.contains(secret)) }
        }
    }

    /// A big-endian section, then a second section whose interface is another link type (a
    /// concatenated file), then a last block cut short by the end of the file: every packet,
    /// the cut one with its missing tail, and the damage said.
    @Test func sectionsByteOrdersAndACutLastBlock() throws {
        let dir = CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let records = try Self.records(CLI.capture("wikipedia.pcap"))
        var w = Writer()
        w.bigEndian = true
        w.section(); w.interface(dlt: 1)
        let half = records.count / 2
        for r in records[..<half] { w.packet(seconds: r.seconds, micros: r.micros, r.data) }
        w.bigEndian = false
        w.section(); w.interface(dlt: 12)   // raw IP: the same packets without their Ethernet header
        for r in records[half...] { w.packet(seconds: r.seconds, micros: r.micros, r.data.dropFirst(14)) }
        let path = try Self.write(w, "sections.pcapng", in: dir)
        let original = try CLI.run(["-r", CLI.capture("wikipedia.pcap"), "--format", "tsv", "--fields", "time,url,status,size"])
        let sections = try CLI.run(["-r", path, "--format", "tsv", "--fields", "time,url,status,size"])
        #expect(sections.status == 0, "\(sections.stderr)")
        #expect(sections.text == original.text, "\(sections.stderr)")

        var cut = w
        cut.bytes = cut.bytes.prefix(cut.bytes.count - 40)
        let cutPath = try Self.write(cut, "cut.pcapng", in: dir)
        let r = try CLI.run(["-r", cutPath, "--format", "tsv", "--fields", "time,url,status"])
        #expect(r.stderr.contains("cut short"), "\(r.stderr)")
        #expect(r.text.split(separator: "\n").count == original.text.split(separator: "\n").count, "\(r.stderr)")
    }
}
