import CPcap
#if canImport(Glibc)
import Glibc
#endif

/// `-w` with `-r`: the packets that pass the filter, written to a pcap file as they are read
/// (nanosecond timestamps), as tcpdump -r … -w does. The file is opened at once (so a path that
/// cannot be written is said before anything is read); its link type is the first packet's, and
/// packets of another link type (a second input, a multi-link pcapng) are counted, not written.
public final class PacketWriter {
    private var file: UnsafeMutablePointer<FILE>?
    private var dead: OpaquePointer? = nil
    private var dumper: OpaquePointer? = nil
    public let path: String
    public private(set) var dlt: Int32? = nil
    public private(set) var written: UInt64 = 0
    /// Packets not written because their link type differs from the file's.
    public private(set) var otherLinkType: UInt64 = 0

    public init(path: String) throws(OutputError) {
        self.path = path
        guard let f = fopen(path, "wb") else {
            throw OutputError(message: "cannot write '\(path)': \(String(cString: strerror(errno)))")
        }
        file = f
    }

    deinit { close() }

    /// Writes one packet of link type `dlt` (the first packet fixes the file's).
    public func write(_ packet: CapturedPacket, dlt packetDLT: Int32, snaplen: Int32) {
        if dumper == nil {
            guard let file, let d = pcap_open_dead_with_tstamp_precision(packetDLT, snaplen > 0 ? snaplen : 262_144,
                                                                          UInt32(PCAP_TSTAMP_PRECISION_NANO)) else { return }
            dead = d
            dumper = pcap_dump_fopen(d, file)
            if dumper == nil { return }
            self.file = nil   // the dumper owns it now
            dlt = packetDLT
        }
        guard packetDLT == dlt, let dumper else { otherLinkType &+= 1; return }
        var header = pcap_pkthdr()
        header.ts.tv_sec = Int(packet.timestamp.nanoseconds / 1_000_000_000)
        header.ts.tv_usec = Int(packet.timestamp.nanoseconds % 1_000_000_000)   // nanoseconds: the dumper's precision
        header.caplen = UInt32(packet.bytes.count)
        header.len = UInt32(max(packet.wireLength, packet.bytes.count))
        guard let base = packet.bytes.baseAddress else { return }
        pcap_dump(UnsafeMutableRawPointer(dumper).assumingMemoryBound(to: UInt8.self), &header, base.assumingMemoryBound(to: UInt8.self))
        written &+= 1
    }

    /// Flushes and closes the file (an empty capture when no packet passed: a pcap header alone
    /// would need a link type, so the file is left empty).
    public func close() {
        if let dumper { pcap_dump_close(dumper) }
        dumper = nil
        if let dead { pcap_close(dead) }
        dead = nil
        if let file { fclose(file) }
        file = nil
    }
}
