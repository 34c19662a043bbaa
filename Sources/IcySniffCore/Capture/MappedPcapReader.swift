import CPcap
import CIcyShims
#if canImport(Glibc)
import Glibc
#endif

/// The records of a classic pcap file, read in place from a read-only mapping of the file: no
/// `read(2)` copying every byte from the page cache into a buffer (39 % of a one-core run's
/// samples went to the kernel's `_copy_to_iter`), and packets that stay valid after the next
/// read, for as long as the reader lives.
///
/// Only the records libpcap would return unchanged are read here: a record whose header or data
/// is cut short, one longer than the file's snapshot length (libpcap cuts it), and everything
/// after the end of the mapping (a file that grew) are handed back to libpcap, whose `FILE` is
/// positioned at that record (`handOff`): the messages, the cut-record recovery and the growth
/// are libpcap's, unchanged. `open` also leaves to libpcap the files whose records libpcap
/// rewrites: other versions than 2.4 (lengths swapped), the patched ("Kuznetzov") header, the
/// link types whose pseudo-headers it byte-swaps or fixes up (USB, NFLOG, PFLOG, Linux cooked
/// captures from the other byte order).
///
/// A file truncated while it is mapped: the pages past its new end read as zeros (the SIGBUS
/// guard of `icy_map_file`) and `next()` answers `.failed` at the next record.
///
/// Resident memory: the mapping's pages count as the process's RSS once touched; the pages
/// behind the read position are released every `dropBehindBytes` (`MADV_DONTNEED`: a private,
/// unmodified file mapping reads them again from the page cache if a packet is looked at later),
/// so the file's share of the RSS stays within about two megabytes.
///
/// A struct, stored inline in `PcapSource` and advanced in place: the per-packet path touches no
/// reference count (as a class, the reader was retained and released for every packet: 10
/// million instructions on the 200 MB benchmark). `PcapMapping` owns what must be freed.
struct MappedPcapReader {
    enum Next {
        case packet(CapturedPacket)
        /// libpcap reads on from `offset` (its `FILE` must be positioned there).
        case handOff(offset: Int)
        case failed(String)
    }

    /// The mapping and the filter program, kept alive by whoever holds the reader (and by
    /// `PcapSource` after a hand-off: packets already returned stay valid).
    let mapping: PcapMapping
    private let base: UnsafeRawPointer
    private let length: Int
    private let slot: Int32
    /// The file's descriptor (owned by libpcap's `FILE`), for its size when it shrank.
    private let fd: Int32
    private let swapped: Bool
    private let nanosecondFile: Bool
    /// libpcap's snapshot length for the file (`pcap_snapshot`: the header's, adjusted when it is
    /// 0 or beyond what the link type allows).
    private let snapshot: UInt32
    private(set) var offset = 24
    private var filter: UnsafeMutablePointer<bpf_program>? = nil
    private var droppedUpTo = 0
    /// Every cache line before this was asked for (`prefetch(before:)`).
    private var prefetchedUpTo = 0
    /// How far ahead of the record being returned the file's lines are asked for: 4 KiB, a few
    /// records (one-core NDJSON, 200 MB benchmark, 11 alternations: none 0.163-0.168 s, 1 KiB
    /// 0.147, 2-4 KiB 0.145-0.148, 6 KiB 0.149, 8 KiB 0.154, 16 KiB 0.152).
    static let prefetchDistance = 4096
    /// 2 MiB. Each release unmaps pages, and while another thread of the process runs on the
    /// other core (the decryption thread, the export thread) the kernel must flush that core's
    /// TLB too: an inter-processor interrupt per madvise(2), 4.5 % of a TLS run's samples with
    /// 256 KiB windows. 15 alternations (200 MB capture; 104 MB TLS twin with keys, HAR):
    /// 256 KiB: TLS 0.0745 s, NDJSON two cores 0.1096 s; 1 MiB: 0.0668 / 0.1075; 2 MiB: 0.0616 /
    /// 0.1077. Peak RSS (median of 3): NDJSON 22.9 -> 24.3 MiB, HAR 28.2 -> 28.9, TLS 35.4 ->
    /// 35.6 (4 MiB: 26.3 / 30.8 / 37.5): clean page-cache pages, the anonymous memory is the
    /// same.
    static let dropBehindBytes = 2 << 20

    /// A reader for the file libpcap opened as `handle` (with nanosecond precision), or nil when
    /// libpcap should read it (see the type's comment) or it cannot be mapped.
    init?(fd: Int32, size: Int, handle: OpaquePointer) {
        guard size >= 24 else { return nil }
        var header = [UInt8](repeating: 0, count: 24)
        guard header.withUnsafeMutableBytes({ pread(fd, $0.baseAddress, 24, 0) }) == 24 else { return nil }
        let magic = UInt32(header[0]) | UInt32(header[1]) << 8 | UInt32(header[2]) << 16 | UInt32(header[3]) << 24
        guard let form = CaptureFile.pcapForm(magic: magic) else { return nil }
        swapped = form.swapped
        nanosecondFile = form.nanosecond
        guard pcap_is_swapped(handle) == (swapped ? 1 : 0) else { return nil }
        let major = swapped ? UInt16(header[4]) << 8 | UInt16(header[5]) : UInt16(header[4]) | UInt16(header[5]) << 8
        let minor = swapped ? UInt16(header[6]) << 8 | UInt16(header[7]) : UInt16(header[6]) | UInt16(header[7]) << 8
        guard major == 2, minor == 4 else { return nil }
        let dlt = pcap_datalink(handle)
        switch dlt {
        case DLT_USB_LINUX_MMAPPED: return nil
        case DLT_PFLOG, DLT_LINUX_SLL, DLT_LINUX_SLL2, DLT_USB_LINUX, DLT_NFLOG: if swapped { return nil }
        default: break
        }
        let snap = pcap_snapshot(handle)
        guard snap > 0 else { return nil }
        snapshot = UInt32(snap)
        var address: UnsafeRawPointer? = nil
        let slot = icy_map_file(fd, size, &address)
        guard slot >= 0, let address else { return nil }
        self.slot = slot
        self.fd = fd
        mapping = PcapMapping(slot: slot)
        base = address
        length = size
        // Read-ahead as for a sequential read(2). Populating the page tables ahead of the reader
        // (MADV_POPULATE_READ, 1-8 MiB at a time) halved the page faults, and asking for the next
        // 4-16 MiB (MADV_WILLNEED) on a cold page cache: neither changed the time measurably
        // (docs/BENCHMARK.md, "Decisions that moved the figures": Reading).
        _ = icy_mapping_advise(slot, 0, size, MADV_SEQUENTIAL)
    }

    /// Runs `program` (compiled by libpcap for this file's link type) on every record, as
    /// libpcap's own loop does with `pcap_setfilter`'s.
    mutating func setFilter(_ program: bpf_program) {
        filter = mapping.setFilter(program)
    }

    private var shrank: Bool { icy_mapping_faults(slot) != 0 }

    private func shrinkFailure() -> Next {
        var st = stat()
        let now = fstat(fd, &st) == 0 ? "\(st.st_size) bytes" : "shorter"
        return .failed("the file was cut short while it was read: \(now) now, \(length) bytes when reading began")
    }

    @inline(__always)
    mutating func next() -> Next {
        while true {
            let at = offset
            guard length - at >= 16 else { return shrank ? shrinkFailure() : .handOff(offset: at) }
            var sec = base.loadUnaligned(fromByteOffset: at, as: UInt32.self)
            var frac = base.loadUnaligned(fromByteOffset: at + 4, as: UInt32.self)
            var caplen = base.loadUnaligned(fromByteOffset: at + 8, as: UInt32.self)
            var len = base.loadUnaligned(fromByteOffset: at + 12, as: UInt32.self)
            if shrank { return shrinkFailure() }
            if swapped {
                sec = sec.byteSwapped; frac = frac.byteSwapped; caplen = caplen.byteSwapped; len = len.byteSwapped
            }
            guard caplen <= snapshot, Int(caplen) <= length - at - 16 else { return .handOff(offset: at) }
            offset = at + 16 + Int(caplen)
            let data = base + (at + 16)
            prefetch(before: min(offset + Self.prefetchDistance, length))
            // Before the filter: records it rejects are read too (a filter that kept no packet
            // left the whole file resident, 213 MiB for the 200 MB benchmark capture).
            if at - droppedUpTo >= Self.dropBehindBytes { dropBehind(before: at) }
            if let filter {
                var h = pcap_pkthdr()
                h.caplen = caplen
                h.len = len
                if pcap_offline_filter(filter, &h, data.assumingMemoryBound(to: UInt8.self)) == 0 { continue }
            }
            // As libpcap fills `pcap_pkthdr` from the file's 32-bit signed fields, at nanosecond precision.
            let nanoseconds = nanosecondFile ? Int64(Int32(bitPattern: frac)) : Int64(Int32(bitPattern: frac)) &* 1000
            let ts = Timestamp(seconds: Int64(Int32(bitPattern: sec)), nanoseconds: nanoseconds)
            return .packet(CapturedPacket(bytes: UnsafeRawBufferPointer(start: data, count: Int(caplen)), timestamp: ts, wireLength: Int(len)))
        }
    }

    /// Asks the CPU for every cache line of the mapping before `end` not asked for yet.
    ///
    /// The reader touches a packet's first lines (record header, link, IP and TCP headers) and,
    /// for TCP, its last 128 bytes (`HalfStream.remember`): a few lines of every record, far
    /// apart, which the hardware prefetchers do not follow across pages. Each touch was a miss to
    /// memory in turn, and the copy of those 128 bytes, the first touch, took 15-18 % of a
    /// one-core run's samples. Prefetching the lines a few records ahead lets the misses overlap
    /// with the work on the packets before them (3.2 million PREFETCHT0 for 205 MB, ~14
    /// million instructions: less than the stalls they remove). A line of a page not mapped yet
    /// is dropped by the CPU, never faulted in.
    @inline(__always)
    private mutating func prefetch(before end: Int) {
        while prefetchedUpTo < end {
            icy_prefetch(base + prefetchedUpTo)
            prefetchedUpTo &+= 64
        }
    }

    /// Releases the pages before the record at `at` (whole pages).
    private mutating func dropBehind(before at: Int) {
        let upTo = at & ~4095
        _ = icy_mapping_advise(slot, droppedUpTo, upTo - droppedUpTo, MADV_DONTNEED)
        droppedUpTo = upTo
    }
}

/// What a `MappedPcapReader` holds that must be given back: the mapping (its slot in the SIGBUS
/// guard's registry) and the compiled filter.
final class PcapMapping {
    let slot: Int32
    private var filter: UnsafeMutablePointer<bpf_program>? = nil

    init(slot: Int32) { self.slot = slot }

    deinit {
        if let filter {
            pcap_freecode(filter)
            filter.deallocate()
        }
        icy_unmap_file(slot)
    }

    /// Keeps `program` (freeing the one it replaces) and returns where it is.
    func setFilter(_ program: bpf_program) -> UnsafeMutablePointer<bpf_program> {
        if let filter { pcap_freecode(filter) } else { filter = .allocate(capacity: 1) }
        filter!.initialize(to: program)
        return filter!
    }
}
