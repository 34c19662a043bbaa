import Foundation
import Testing
@testable import IcySniffCore
#if canImport(Glibc)
import Glibc
#endif

/// The mapped reader (`MappedPcapReader`) against what can happen to a file while it is mapped,
/// and against libpcap's reader on the same bytes. (Every capture of the repository and of the
/// corpus through both readers, compared as outputs: FileReaderTests and ConformanceTests.)
@Suite final class MappedPcapReaderTests {
    /// This test's files, removed when it ends (a new instance runs each test).
    let dir = FileManager.default.temporaryDirectory.appendingPathComponent("icy-sniff-mapped-\(UUID().uuidString)")
    deinit { try? FileManager.default.removeItem(at: dir) }

    func copy(of name: String) throws -> String {
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let path = dir.appendingPathComponent(name).path
        try FileManager.default.copyItem(atPath: Paths.captures.appendingPathComponent(name).path, toPath: path)
        return path
    }

    struct Read: Equatable {
        var bytes: [UInt8]
        var timestamp: Timestamp
        var wireLength: Int
    }

    func readAll(_ source: PcapSource) -> (packets: [Read], failure: String?) {
        var out: [Read] = []
        while true {
            switch source.next() {
            case .packet(let p): out.append(Read(bytes: Array(p.bytes), timestamp: p.timestamp, wireLength: p.wireLength))
            case .failed(let message): return (out, message)
            case .end, .timeout: return (out, nil)
            }
        }
    }

    @Test func readsTheSamePacketsAsLibpcap() throws {
        let path = Paths.captures.appendingPathComponent("wikipedia.pcap").path
        let mapped = try PcapSource.open(path: path)
        #expect(mapped.readsMapped)
        let libpcap = try PcapSource.open(path: path, reader: .libpcap)
        #expect(!libpcap.readsMapped)
        let a = readAll(mapped), b = readAll(libpcap)
        #expect(a.packets.count > 100)
        #expect(a.packets == b.packets)
        #expect(a.failure == nil && b.failure == nil)
        #expect(mapped.packetsRead == libpcap.packetsRead && mapped.bytesRead == libpcap.bytesRead)
    }

    /// The BPF filter runs on the mapped packets (`pcap_offline_filter`) as libpcap runs it.
    @Test func theFilterKeepsWhatLibpcapKeeps() throws {
        let path = Paths.captures.appendingPathComponent("wikipedia.pcap").path
        for filter in ["udp", "tcp port 80 and tcp[tcpflags] & tcp-push != 0", "ip6", "greater 1000"] {
            let mapped = try PcapSource.open(path: path, filter: filter)
            #expect(mapped.readsMapped)
            let a = readAll(mapped), b = readAll(try PcapSource.open(path: path, filter: filter, reader: .libpcap))
            #expect(a.packets == b.packets, "\(filter)")
        }
    }

    /// The resident part (kB) of this process's mapping of `path` (`/proc/self/smaps`).
    func residentKB(ofMappingOf path: String) -> Int? {
        // Read to its end: procfs files have no size for a whole-file read to go by.
        guard let data = FileHandle(forReadingAtPath: "/proc/self/smaps")?.readDataToEndOfFile() else { return nil }
        let smaps = String(decoding: data, as: UTF8.self)
        var inMapping = false
        for line in smaps.split(separator: "\n") {
            // A mapping's first line starts with its address range ("7f…-7f…"); its fields follow.
            let first = line.prefix { $0 != " " }
            if first.contains("-") && first.allSatisfy({ $0 == "-" || $0.isHexDigit }) {
                inMapping = line.hasSuffix(path)
            } else if inMapping, line.hasPrefix("Rss:") {
                return Int(line.split(separator: " ")[1])
            }
        }
        return nil
    }

    /// The pages behind the reader are released whether the filter keeps the packets on them or
    /// not: a filter that keeps none of an 8 MB file leaves about a release window of it resident,
    /// not the whole file.
    @Test func pagesOfPacketsTheFilterRejectsAreReleased() throws {
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let one = try [UInt8](Data(contentsOf: Paths.captures.appendingPathComponent("wikipedia.pcap")))
        var big = Array(one[0..<24])
        while big.count < 8 << 20 { big += one[24...] }
        let path = dir.appendingPathComponent("large.pcap").path
        try Data(big).write(to: URL(fileURLWithPath: path))
        let source = try PcapSource.open(path: path, filter: "udp port 9")
        #expect(source.readsMapped)
        #expect(readAll(source).packets.isEmpty)
        // The mapping stays while the source lives (its packets would stay valid).
        let resident = try #require(residentKB(ofMappingOf: path))
        #expect(resident * 1024 < big.count / 2, "\(resident) kB of a \(big.count / 1024) kB file resident")
        withExtendedLifetime(source) {}
    }

    /// Packets read in place stay valid after the next read (libpcap's are overwritten by it).
    @Test func packetsOutliveTheNextRead() throws {
        let source = try PcapSource.open(path: Paths.captures.appendingPathComponent("wikipedia.pcap").path)
        guard case .packet(let first) = source.next() else { Issue.record("no packet"); return }
        let copy = Array(first.bytes)
        for _ in 0..<50 { _ = source.next() }
        #expect(Array(first.bytes) == copy)
    }

    /// A file cut short by another program while it is mapped: no SIGBUS, a failure at the next
    /// record with the sizes, and the packets before it as they were.
    @Test func aFileTruncatedWhileMappedFailsCleanly() throws {
        let path = try copy(of: "wikipedia.pcap")
        let reference = readAll(try PcapSource.open(path: path, reader: .libpcap)).packets
        let source = try PcapSource.open(path: path)
        #expect(source.readsMapped)
        var read: [Read] = []
        for _ in 0..<5 {
            guard case .packet(let p) = source.next() else { Issue.record("no packet"); return }
            read.append(Read(bytes: Array(p.bytes), timestamp: p.timestamp, wireLength: p.wireLength))
        }
        #expect(truncate(path, 4096) == 0)
        let rest = readAll(source)
        #expect(Array((read + rest.packets).prefix(5)) == Array(reference.prefix(5)))
        let failure = try #require(rest.failure)
        #expect(failure.contains("cut short while it was read"), "\(failure)")
        #expect(failure.contains("4096 bytes now"), "\(failure)")
        #expect(read.count + rest.packets.count < reference.count)
    }

    /// Records appended after the file was opened (a capture still being written) are read, as
    /// libpcap reads them: the mapped reader hands the rest to libpcap at the end of its mapping.
    @Test func recordsAppendedWhileReadingAreRead() throws {
        let path = try copy(of: "wikipedia.pcap")
        let original = try Data(contentsOf: URL(fileURLWithPath: path))
        let reference = readAll(try PcapSource.open(path: path, reader: .libpcap)).packets
        let source = try PcapSource.open(path: path)
        guard case .packet = source.next() else { Issue.record("no packet"); return }
        // The same records once more, after the first reads.
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        try handle.seekToEnd()
        try handle.write(contentsOf: original.dropFirst(24))
        try handle.close()
        let rest = readAll(source)
        #expect(rest.failure == nil)
        #expect(rest.packets.count + 1 == 2 * reference.count)
        #expect(Array(rest.packets.suffix(reference.count)) == reference)
    }
}
