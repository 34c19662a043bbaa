import Foundation
import Testing

/// Two independent readers of pcap files: icy-sniff's own (`--file-reader mapped`, the default:
/// records read in place from a mapping of the file) and libpcap's (`--file-reader libpcap`).
/// Every pcap file of the repository, and files rewritten into the forms and damages libpcap
/// treats specially, must give the same output, the same messages and the same exit status
/// through both. (The corpus in ../shared: ConformanceTests.)
@Suite(.hangLimit) struct FileReaderTests {
    struct Outcome: Equatable {
        var status: Int32
        var stdout: Data
        var stderr: String
    }

    /// `capture` read through `reader` with `output` (the output options), with its key log.
    static func run(_ capture: String, _ reader: String, _ output: [String] = ["--format", "ndjson"]) throws -> Outcome {
        let r = try CLI.run(["-r", capture, "--file-reader", reader] + output + CLI.keyLogArguments(beside: capture))
        return Outcome(status: r.status, stdout: r.stdout, stderr: r.stderr)
    }

    /// Reads `capture` through both readers with `output` and expects the same exit status,
    /// messages and output; answers the mapped reader's. (ConformanceTests runs it over the
    /// corpus too.)
    @discardableResult
    static func expectSame(_ capture: String, _ output: [String] = ["--format", "ndjson"]) throws -> Outcome {
        let mapped = try run(capture, "mapped", output), libpcap = try run(capture, "libpcap", output)
        let name = URL(fileURLWithPath: capture).lastPathComponent
        #expect(mapped.status == libpcap.status, "\(name): exit \(mapped.status) vs \(libpcap.status)")
        #expect(mapped.stderr == libpcap.stderr, "\(name): messages differ:\n\(mapped.stderr)\n--- libpcap:\n\(libpcap.stderr)")
        #expect(mapped.stdout == libpcap.stdout, "\(name): outputs differ (\(mapped.stdout.count) vs \(libpcap.stdout.count) bytes)")
        return mapped
    }

    @Test func everyPcapFileHereReadsTheSameThroughBothReaders() throws {
        var files: [String] = []
        for folder in ["captures", "Tests/Fixtures"] {
            let root = CLI.packageRoot.appendingPathComponent(folder)
            let walker = FileManager.default.enumerator(atPath: root.path)!
            while let p = walker.nextObject() as? String {
                if p.hasSuffix(".pcap") { files.append(root.appendingPathComponent(p).path) }
            }
        }
        #expect(files.count >= 30)
        var transactions = 0
        for file in files.sorted() {
            let out = try Self.expectSame(file)
            transactions += out.stdout.split(separator: UInt8(ascii: "\n")).count
        }
        #expect(transactions > 100)
        // With a capture filter, which the mapped reader runs itself (pcap_offline_filter).
        try Self.expectSame(CLI.capture("wikipedia.pcap"), ["--format", "ndjson", "-f", "tcp and not port 443"])
    }

    // MARK: rewritten files

    struct Record {
        var seconds: UInt32
        var fraction: UInt32
        var caplen: UInt32
        var length: UInt32
        var data: [UInt8]
    }

    /// wikipedia.pcap's records (little-endian, microseconds, version 2.4, Ethernet).
    func records() throws -> (snaplen: UInt32, linkType: UInt32, records: [Record]) {
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: CLI.capture("wikipedia.pcap"))))
        func u32(_ at: Int) -> UInt32 { UInt32(bytes[at]) | UInt32(bytes[at + 1]) << 8 | UInt32(bytes[at + 2]) << 16 | UInt32(bytes[at + 3]) << 24 }
        #expect(u32(0) == 0xa1b2c3d4)
        var out: [Record] = []
        var at = 24
        while at + 16 <= bytes.count {
            let caplen = Int(u32(at + 8))
            out.append(Record(seconds: u32(at), fraction: u32(at + 4), caplen: UInt32(caplen), length: u32(at + 12),
                              data: Array(bytes[(at + 16)..<(at + 16 + caplen)])))
            at += 16 + caplen
        }
        return (u32(16), u32(20), out)
    }

    func write(_ records: [Record], magic: UInt32 = 0xa1b2c3d4, bigEndian: Bool = false, minor: UInt16 = 4,
               snaplen: UInt32, linkType: UInt32) -> [UInt8] {
        var out: [UInt8] = []
        func u32(_ v: UInt32) { out += bigEndian ? [UInt8(v >> 24), UInt8(v >> 16 & 0xff), UInt8(v >> 8 & 0xff), UInt8(v & 0xff)]
                                                 : [UInt8(v & 0xff), UInt8(v >> 8 & 0xff), UInt8(v >> 16 & 0xff), UInt8(v >> 24)] }
        func u16(_ v: UInt16) { out += bigEndian ? [UInt8(v >> 8), UInt8(v & 0xff)] : [UInt8(v & 0xff), UInt8(v >> 8)] }
        u32(magic); u16(2); u16(minor); u32(0); u32(0); u32(snaplen); u32(linkType)
        for r in records {
            u32(r.seconds); u32(r.fraction); u32(r.caplen); u32(r.length)
            out += r.data
        }
        return out
    }

    /// The forms of pcap libpcap reads in its own ways (byte order, nanoseconds, version 2.3's
    /// swapped lengths, records longer than the snapshot length, timestamps past 2038) and the
    /// damages it reports (a length no capture has, a record or a header cut short): the same
    /// output and the same messages through both readers.
    @Test func rewrittenAndDamagedFilesReadTheSameThroughBothReaders() throws {
        let (snaplen, linkType, records) = try records()
        #expect(records.count > 100)
        let dir = CLI.temporaryDirectory()
        var variants: [(String, [UInt8])] = []
        variants.append(("big-endian", write(records, bigEndian: true, snaplen: snaplen, linkType: linkType)))
        variants.append(("nanoseconds", write(records.map { var r = $0; r.fraction = r.fraction * 1000 + 123; return r },
                                              magic: 0xa1b23c4d, snaplen: snaplen, linkType: linkType)))
        variants.append(("big-endian-nanoseconds", write(records.map { var r = $0; r.fraction *= 1000; return r },
                                                         magic: 0xa1b23c4d, bigEndian: true, snaplen: snaplen, linkType: linkType)))
        variants.append(("version-2.3", write(records.map { var r = $0; (r.caplen, r.length) = (r.length, r.caplen); return r },
                                              minor: 3, snaplen: snaplen, linkType: linkType)))
        // The header says 600 bytes, the records are longer: libpcap cuts them to 600.
        #expect(records.contains { $0.caplen > 600 })
        variants.append(("longer-than-snaplen", write(records, snaplen: 600, linkType: linkType)))
        variants.append(("after-2038", write(records.map { var r = $0; r.seconds &+= 0x7000_0000; return r },
                                             snaplen: snaplen, linkType: linkType)))
        var damaged = records
        damaged[40].caplen = 0x00ff_ffff
        variants.append(("impossible-length", write(damaged, snaplen: snaplen, linkType: linkType)))
        let whole = write(records, snaplen: snaplen, linkType: linkType)
        variants.append(("record-cut-short", Array(whole.dropLast(10))))
        let firstRecords = write(Array(records.prefix(60)), snaplen: snaplen, linkType: linkType)
        variants.append(("header-cut-short", Array(whole.prefix(firstRecords.count + 7))))

        let original = try Self.run(CLI.capture("wikipedia.pcap"), "mapped")
        var messages: [String: String] = [:]
        for (name, bytes) in variants {
            let path = dir.appendingPathComponent("\(name).pcap").path
            #expect(FileManager.default.createFile(atPath: path, contents: Data(bytes)))
            let out = try Self.expectSame(path)
            messages[name] = out.stderr
            if name == "big-endian" || name == "big-endian-nanoseconds" {
                // The same rows but for the capture's name.
                let rows = String(decoding: out.stdout, as: UTF8.self).replacingOccurrences(of: path, with: "X")
                let originalRows = String(decoding: original.stdout, as: UTF8.self).replacingOccurrences(of: CLI.capture("wikipedia.pcap"), with: "X")
                #expect(rows == originalRows, "\(name): not the transactions of the file it was rewritten from")
            }
            if !["impossible-length", "header-cut-short"].contains(name) {
                #expect(!out.stdout.isEmpty, "\(name): no transactions")
            }
        }
        // The damages are libpcap's messages, from the record that has them.
        #expect(messages["impossible-length"]?.contains("invalid packet capture length 16777215") == true, "\(messages["impossible-length"] ?? "")")
        #expect(messages["header-cut-short"]?.contains("tried to read 16 header bytes, only got 7") == true, "\(messages["header-cut-short"] ?? "")")
    }
}
