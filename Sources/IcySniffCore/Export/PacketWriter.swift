import CPcap
#if canImport(Glibc)
import Glibc
#endif

/// `-w`: the packets read (live, or with `-r` those that pass the filter) saved to pcap files
/// with nanosecond timestamps, as tcpdump -w does, rotated by `-G`, `-C` and `-W` like the
/// transaction outputs (`Rotator`: the same names, periods and ring). Each file is written under
/// a temporary name and moved into place when complete, so a file that is there is whole.
///
/// Its link type is the first packet's; packets of another link type (a second input, a
/// multi-link pcapng) are counted, not written. A file with no packet is left empty: a pcap
/// header alone would need a link type.
public final class PacketWriter {
    /// One pcap file. libpcap writes the file header (it alone maps the DLT to the file's
    /// LINKTYPE); the records, a fixed 16-byte header and the bytes, are appended here, into a
    /// buffered `OutputFile`: the same bytes `pcap_dump` writes, in the host's byte order as
    /// the header's magic says.
    public final class File: RotatedFile {
        let output: OutputFile
        var headerWritten = false
        init(output: OutputFile) { self.output = output }
        public var size: Int { output.bytesWritten }
        public func complete(as name: String, comment: String?) throws(OutputError) { try output.commit(as: name) }
    }

    public let path: String
    private let rotator: Rotator<File>
    /// The pcap file header for this run's link type (made by libpcap for the first packet).
    private var fileHeader: [UInt8]? = nil
    public private(set) var dlt: Int32? = nil
    public private(set) var written: UInt64 = 0
    /// Packets not written because their link type differs from the file's.
    public private(set) var otherLinkType: UInt64 = 0
    /// Packets not written because their file could not be opened.
    public private(set) var lost: UInt64 = 0

    /// `onError`: a file that could not be opened or completed, said when it happens.
    public init(path: String, rotation: RotationPolicy = RotationPolicy(), onError: @escaping (String) -> Void = { _ in }) {
        self.path = path
        rotator = Rotator(naming: RotationNaming(pattern: path, policy: rotation)) { name throws(OutputError) in
            File(output: try OutputFile(path: name))
        }
        rotator.onError = onError
    }

    /// Before the run (`Rotator.prepare`): the problem with the path, if any.
    public func prepare(now: Timestamp) -> String? { rotator.prepare(now: now) }

    /// Writes one packet of link type `dlt` (the first packet fixes the file's).
    public func write(_ packet: CapturedPacket, dlt packetDLT: Int32, snaplen: Int32) {
        if fileHeader == nil {
            guard let header = Self.fileHeader(dlt: packetDLT, snaplen: snaplen > 0 ? snaplen : 262_144) else { lost &+= 1; return }
            fileHeader = header
            dlt = packetDLT
        }
        guard packetDLT == dlt else { otherLinkType &+= 1; return }
        guard let file = rotator.file(at: packet.timestamp) else { lost &+= 1; return }
        if !file.headerWritten, let fileHeader {
            file.output.write(fileHeader)
            file.headerWritten = true
        }
        let ns = packet.timestamp.nanoseconds
        var record = (UInt32(truncatingIfNeeded: ns / 1_000_000_000), UInt32(truncatingIfNeeded: ns % 1_000_000_000),
                      UInt32(packet.bytes.count), UInt32(max(packet.wireLength, packet.bytes.count)))
        withUnsafeBytes(of: &record) { file.output.write($0.bindMemory(to: UInt8.self)) }
        file.output.write(packet.bytes.bindMemory(to: UInt8.self))
        written &+= 1
        rotator.wrote()
    }

    /// Pushes what is buffered to the file (a live capture, every second).
    public func flush() { rotator.current?.output.flush() }

    /// The clock of a live capture moved on with no packet: a `-G` period that ended closes.
    public func advance(to now: Timestamp) { rotator.advance(to: now) }

    /// `SIGHUP`: the current file is completed; the next packet opens a new one.
    public func reopen() { rotator.reopen() }

    /// Completes the last file; false when a file could not be written. Again: nothing more.
    public func close() -> Bool {
        rotator.finish(comment: nil, ensureFile: false)
        return rotator.failures == 0 && lost == 0
    }

    public var failures: Int { rotator.failures }

    /// The 24-byte pcap file header libpcap writes for this link type, nanosecond precision.
    private static func fileHeader(dlt: Int32, snaplen: Int32) -> [UInt8]? {
        guard let dead = pcap_open_dead_with_tstamp_precision(dlt, snaplen, UInt32(PCAP_TSTAMP_PRECISION_NANO)) else { return nil }
        defer { pcap_close(dead) }
        var buffer: UnsafeMutablePointer<CChar>? = nil
        var size = 0
        guard let memory = open_memstream(&buffer, &size) else { return nil }
        guard let dumper = pcap_dump_fopen(dead, memory) else { fclose(memory); free(buffer); return nil }
        pcap_dump_close(dumper)   // closes the stream: buffer and size are final
        defer { free(buffer) }
        guard let buffer, size == 24 else { return nil }
        return UnsafeRawBufferPointer(start: buffer, count: size).map { $0 }
    }
}
