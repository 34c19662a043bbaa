import CPcap
import CIcyShims
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Live captures: the interfaces libpcap can capture on, and opening one.
extension PcapSource {
    /// The interfaces libpcap can capture on, as `tcpdump -D` lists them: name, description and
    /// flags (Up, Running, Loopback, Wireless).
    public static func interfaces() throws(CaptureError) -> [(name: String, description: String?, flags: [String])] {
        var errbuf = [CChar](repeating: 0, count: Int(PCAP_ERRBUF_SIZE) + 1)
        var list: UnsafeMutablePointer<pcap_if_t>? = nil
        guard pcap_findalldevs(&list, &errbuf) == 0 else {
            throw .liveCaptureFailed(interface: "-", reason: String(cBuffer: errbuf))
        }
        defer { pcap_freealldevs(list) }
        var out: [(String, String?, [String])] = []
        var node = list
        while let n = node {
            let f = n.pointee.flags
            var flags: [String] = []
            if f & UInt32(PCAP_IF_UP) != 0 { flags.append("Up") }
            if f & UInt32(PCAP_IF_RUNNING) != 0 { flags.append("Running") }
            if f & UInt32(PCAP_IF_WIRELESS) != 0 { flags.append("Wireless") }
            if f & UInt32(PCAP_IF_LOOPBACK) != 0 { flags.append("Loopback") }
            switch f & UInt32(PCAP_IF_CONNECTION_STATUS) {
            case UInt32(PCAP_IF_CONNECTION_STATUS_CONNECTED): flags.append("Connected")
            case UInt32(PCAP_IF_CONNECTION_STATUS_DISCONNECTED): flags.append("Disconnected")
            default: break
            }
            if flags.isEmpty { flags.append("none") }
            out.append((String(cString: n.pointee.name), n.pointee.description.map { String(cString: $0) }, flags))
            node = n.pointee.next
        }
        return out
    }

    /// The kernel buffer of a live capture when `-B` does not say (docs/BENCHMARK.md measures it).
    public static let defaultBufferKiB = 16 << 10

    /// Opens a live capture: whole packets, optional promiscuous mode, a kernel buffer of
    /// `bufferKiB` (`-B`, as tcpdump's).
    ///
    /// Not libpcap's immediate mode: on Linux it means TPACKET_V2, a ring of fixed slots each as
    /// large as the largest frame (64 KiB with segmentation offload on), so 16 MiB hold only a
    /// few hundred packets and bursts are dropped (measured: drops from 500 Mbit/s). Without it,
    /// TPACKET_V3 packs packets into blocks that the kernel hands over when full or after
    /// `readTimeoutMilliseconds`: no drops at 3 Gbit/s on the same machine, rows written 5–15 ms
    /// after the response's last packet (docs/BENCHMARK.md, live capture).
    public static func openLive(interface: String, snaplen: Int32 = 262_144, promiscuous: Bool = false,
                                filter: String? = nil, bufferKiB: Int = defaultBufferKiB,
                                readTimeoutMilliseconds: Int32 = 10) throws(CaptureError) -> PcapSource {
        var errbuf = [CChar](repeating: 0, count: Int(PCAP_ERRBUF_SIZE) + 1)
        guard let handle = pcap_create(interface, &errbuf) else {
            throw .liveCaptureFailed(interface: interface, reason: String(cBuffer: errbuf))
        }
        pcap_set_snaplen(handle, snaplen)
        pcap_set_promisc(handle, promiscuous ? 1 : 0)
        pcap_set_timeout(handle, readTimeoutMilliseconds)
        pcap_set_buffer_size(handle, Int32(clamping: bufferKiB * 1024))
        // Nanoseconds where the interface has them; whatever libpcap ends up giving is read back
        // after activation (`nanosecondsPerTick`), never assumed.
        _ = pcap_set_tstamp_precision(handle, Int32(PCAP_TSTAMP_PRECISION_NANO))
        let status = pcap_activate(handle)
        if status < 0 {
            let detail = String(cString: pcap_geterr(handle))
            let statusText = String(cString: pcap_statustostr(status))
            pcap_close(handle)
            let reason = detail.isEmpty ? statusText : detail
            switch status {
            case PCAP_ERROR_NO_SUCH_DEVICE: throw .noSuchInterface(name: interface, reason: reason)
            case PCAP_ERROR_PERM_DENIED, PCAP_ERROR_PROMISC_PERM_DENIED:
                throw .permissionDenied(interface: interface, reason: reason)
            default: throw .liveCaptureFailed(interface: interface, reason: reason)
            }
        }
        let source = PcapSource(handle: handle, name: interface, isLive: true, decompressCookie: nil)
        if let filter { try source.apply(filter: filter) }
        if pcap_setnonblock(handle, 1, &errbuf) == 0 {
            source.selectableFD = pcap_get_selectable_fd(handle)
        }
        return source
    }
}
