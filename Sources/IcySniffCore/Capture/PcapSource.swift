import CPcap
import CIcyShims
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A capture being read: a libpcap handle, offline (file, compressed file, standard input)
/// or live (an interface), or, for pcapng files, icy-sniff's own block reader (`PcapngReader`:
/// interfaces of several link types, Decryption Secrets Blocks anywhere).
///
/// Call order: `open…`, then `next()` until it answers `.end` or `.failed`; the handle closes on
/// deinit. Packets returned by `next()` borrow the reader's buffer until the following call.
public final class PcapSource {
    /// How regular, uncompressed pcap files are read.
    public enum FileReader: String, Sendable, CaseIterable {
        /// In place, from a mapping of the file (`MappedPcapReader`); libpcap reads what that
        /// reader leaves to it. The default.
        case mapped
        /// libpcap's own reader, through a 1 MiB buffer (`--file-reader libpcap`): the second,
        /// independent reader the tests compare the first with.
        case libpcap
    }

    public enum ReadResult {
        case packet(CapturedPacket)
        /// Live capture only: the read timeout expired with no packet.
        case timeout
        case end
        /// The capture is damaged from here on (truncated record, bad block); what came before is good.
        case failed(String)
    }

    public let name: String
    /// The link type of the capture (of its first interface, for pcapng).
    public let linkType: LinkType
    public let dlt: Int32
    public let isLive: Bool
    /// The link type (DLT) of the packet `next()` returned last: the capture's, except in a
    /// pcapng file whose interfaces differ. An integer, cheap to compare on every packet.
    public private(set) var packetDLT: Int32
    /// Interfaces of more than one link type were described before the first packet.
    public private(set) var hasSeveralLinkTypes = false
    private var handle: OpaquePointer?
    private var pcapng: PcapngReader? = nil
    private var pcapngSnaplen: Int32 = 0
    /// A classic pcap file read in place; nil once it has handed the rest of the file to libpcap.
    private var mapped: MappedPcapReader? = nil
    /// What the source holds of its input file besides the reader, until it closes.
    private var input = PcapInputFile()
    /// The next packet is read in place from the mapped file (not by libpcap).
    var readsMapped: Bool { mapped != nil }
    /// `-w`: every packet returned is also written there (live, or with `-r` after the filter).
    public var saver: PacketWriter? = nil
    /// TLS key logs from Decryption Secrets Blocks, read since the last `takeSecrets`.
    public private(set) var pendingSecrets: [SecretsText]? = nil
    /// Live captures read in non-blocking mode and wait in poll(2), so a signal or a time limit
    /// is noticed within `pollMilliseconds` whatever the traffic.
    var selectableFD: Int32 = -1
    private static let pollMilliseconds: Int32 = 200
    /// Live: reads that found nothing to return (the ring is drained).
    public private(set) var idleReads: UInt64 = 0
    public private(set) var packetsRead: UInt64 = 0
    /// Size of the capture file in bytes (0 when it is not a regular file).
    public var inputSize: Int64 { input.size }
    /// What `peekTime` read, returned by the next `next()` (never set while reading in place).
    private var held: ReadResult? = nil
    /// The record libpcap refused at the end of a cut file, read as far as it goes.
    private var cutRecord = CutRecord()
    /// Set when the last packet was rebuilt from a record cut short by the end of the file.
    public var recoveredPartialRecord: Bool { cutRecord.recovered }
    public private(set) var bytesRead: UInt64 = 0
    /// Nanoseconds per unit of `pcap_pkthdr.ts.tv_usec`: 1 when libpcap gives nanoseconds, 1000
    /// when it gives microseconds. Read from the handle after activation: asking for nanoseconds
    /// (`pcap_set_tstamp_precision`) can fail on a live interface, and libpcap then delivers
    /// microseconds.
    let nanosecondsPerTick: Int64

    init(handle: OpaquePointer, name: String, isLive: Bool, decompressCookie: UnsafeMutableRawPointer?) {
        self.handle = handle
        self.name = name
        self.isLive = isLive
        self.input.decompressCookie = decompressCookie
        self.dlt = pcap_datalink(handle)
        self.linkType = LinkType(dlt: dlt)
        self.packetDLT = dlt
        self.nanosecondsPerTick = Self.nanosecondsPerTick(precision: pcap_get_tstamp_precision(handle))
    }

    private init(pcapng reader: PcapngReader, file: UnsafeMutablePointer<FILE>, name: String, decompressCookie: UnsafeMutableRawPointer?) {
        self.handle = nil
        self.pcapng = reader
        self.input.pcapngFile = file
        self.name = name
        self.isLive = false
        self.input.decompressCookie = decompressCookie
        let first = reader.interfaces.first
        self.dlt = first?.dlt ?? 1
        self.linkType = LinkType(dlt: dlt)
        self.packetDLT = dlt
        self.pcapngSnaplen = first?.snaplen ?? 0
        self.hasSeveralLinkTypes = Set(reader.interfaces.map(\.dlt)).count > 1
        self.nanosecondsPerTick = 1
    }

    /// `pcap_get_tstamp_precision`'s answer as a scale to nanoseconds.
    static func nanosecondsPerTick(precision: Int32) -> Int64 {
        precision == Int32(PCAP_TSTAMP_PRECISION_NANO) ? 1 : 1000
    }

    static let fileBufferSize = 1 << 20

    deinit {
        if let handle { pcap_close(handle) }
        pcapng = nil
        input.close()
        cutRecord.buffer?.deallocate()
    }

    /// A classic pcap file's last record cut short by the end of the file: returned with the
    /// bytes that are there, the failure reported on the next read.
    private struct CutRecord {
        var buffer: UnsafeMutableRawBufferPointer? = nil
        /// The failure to report on the next read, after the readable part was returned.
        var pendingFailure: String? = nil
        var recovered = false
    }

    /// libpcap's description of the link type, e.g. "Ethernet".
    public var linkTypeDescription: String {
        if let p = pcap_datalink_val_to_description(dlt) { return String(cString: p) }
        return linkTypeName
    }

    /// Human-readable name of the link type (libpcap's), e.g. "EN10MB".
    public var linkTypeName: String {
        if let p = pcap_datalink_val_to_name(dlt) { return String(cString: p) }
        return "DLT \(dlt)"
    }

    /// The snapshot length the capture was made with.
    public var snaplen: Int32 { handle.map { pcap_snapshot($0) } ?? pcapngSnaplen }

    /// Opens a capture file, or standard input when `path` is "-". Recognises gzip, zstd, LZ4, xz
    /// and bzip2 by their magic bytes, whatever the name (on standard input too), and
    /// decompresses them as a stream.
    /// `microseconds`: ask libpcap for microsecond timestamps (tests: the reading side must use
    /// whatever precision the handle has, as it must when a live interface refuses nanoseconds).
    /// `reader`: `.mapped` reads a regular, uncompressed pcap file in place (`MappedPcapReader`).
    public static func open(path: String, filter: String? = nil, microseconds: Bool = false,
                            reader: FileReader = .mapped) throws(CaptureError) -> PcapSource {
        let fd: Int32
        if path == "-" {
            fd = dup(0)
        } else {
            fd = Glibc.open(path, O_RDONLY)
        }
        if fd < 0 {
            throw .cannotOpen(path: path, reason: String(cString: strerror(errno)))
        }
        var st = stat()
        if fstat(fd, &st) == 0 && (st.st_mode & S_IFMT) == S_IFDIR {
            close(fd)
            throw .cannotOpen(path: path, reason: "is a directory")
        }
        let isRegular = (st.st_mode & S_IFMT) == S_IFREG
        if isRegular && st.st_size == 0 {
            close(fd)
            throw .emptyFile(path: path)
        }
        // The format by its magic bytes: read in place from a file, consumed from a pipe (and
        // handed to the decompressor to be read first).
        var magic = [UInt8](repeating: 0, count: CaptureFile.magicLength)
        var magicCount = 0
        if isRegular {
            magicCount = max(0, magic.withUnsafeMutableBytes { pread(fd, $0.baseAddress, CaptureFile.magicLength, 0) })
        } else {
            while magicCount < CaptureFile.magicLength {
                let n = magic.withUnsafeMutableBytes { read(fd, $0.baseAddress! + magicCount, CaptureFile.magicLength - magicCount) }
                if n < 0 && errno == EINTR {
                    // Only the run's own signals interrupt (they have no SA_RESTART): a stop
                    // while an idle pipe or FIFO has not sent its first bytes. The driver
                    // names it interrupted; waiting on would outlast the stop.
                    close(fd)
                    throw .cannotOpen(path: path, reason: "interrupted before the first bytes arrived")
                }
                if n <= 0 { break }
                magicCount += n
            }
        }
        let compression = CaptureFile.compression(of: Array(magic.prefix(magicCount)))
        let compressed = compression != Int32(ICY_PLAIN)
        let pcapng = isRegular && (compressed ? CaptureFile.kind(of: path)?.isPcapng == true
                                              : CaptureFile.classify(Array(magic.prefix(min(4, magicCount)))) == true)
        // A regular, uncompressed classic pcap file is read in place (unless `MappedPcapReader`
        // declines it once libpcap has read the header).
        let mapsFile = reader == .mapped && isRegular && !compressed && !pcapng && !microseconds
        var cookie: UnsafeMutableRawPointer? = nil
        let file: UnsafeMutablePointer<FILE>?
        var fileBuffer: UnsafeMutableRawPointer? = nil
        if compressed || !isRegular {
            // Compressed (gzip, zstd, LZ4, xz, bzip2; .pcap.zst and the others as tshark reads
            // them), or a pipe, whose first bytes are already read: one decompressing stream.
            let prefixCount = isRegular ? 0 : magicCount
            file = magic.withUnsafeBufferPointer { icy_decompress_fdopen(fd, compression, $0.baseAddress, prefixCount, &cookie) }
        } else {
            file = fdopen(fd, "rb")
            // Reads of 1 MiB instead of stdio's 4 KiB: 256 times fewer read(2) calls. glibc ignores
            // the size unless it is given the buffer too. Not for a pcap file about to be mapped:
            // libpcap then reads its header, and what the mapped reader hands back (damage, the
            // end), and the megabyte would be filled by the header's read and stay resident.
            if let file, !mapsFile {
                let buffer = UnsafeMutableRawPointer.allocate(byteCount: Self.fileBufferSize, alignment: 4096)
                if setvbuf(file, buffer.assumingMemoryBound(to: CChar.self), _IOFBF, Self.fileBufferSize) == 0 {
                    fileBuffer = buffer
                } else {
                    buffer.deallocate()
                }
            }
        }
        guard let file else {
            let reason = String(cString: strerror(errno))
            close(fd)
            throw .cannotOpen(path: path, reason: reason)
        }
        if pcapng {
            let reader: PcapngReader
            do throws(CaptureError) {
                reader = try PcapngReader(file: file, filter: filter)
            } catch {
                let decompressing = Self.decompressionError(cookie)
                fclose(file)
                fileBuffer?.deallocate()
                if let decompressing { throw .notACapture(path: path, detail: decompressing) }
                if case .notACapture(_, let detail) = error { throw .notACapture(path: path, detail: detail) }
                throw error
            }
            let source = PcapSource(pcapng: reader, file: file, name: path, decompressCookie: cookie)
            source.input.stdioBuffer = fileBuffer
            source.input.fd = fd
            source.input.size = Int64(st.st_size)
            return source
        }
        var errbuf = [CChar](repeating: 0, count: Int(PCAP_ERRBUF_SIZE) + 1)
        guard let handle = pcap_fopen_offline_with_tstamp_precision(
            file, UInt32(microseconds ? PCAP_TSTAMP_PRECISION_MICRO : PCAP_TSTAMP_PRECISION_NANO), &errbuf) else {
            // A compressed file cut (or corrupt) before its first packets: the decompression
            // says why, not the empty or short header libpcap saw.
            let decompressing = Self.decompressionError(cookie)
            fclose(file)
            fileBuffer?.deallocate()
            if let decompressing { throw .notACapture(path: path, detail: decompressing) }
            let detail = String(cBuffer: errbuf)
            if detail.contains("only got 0") || detail.contains("empty") {
                throw .emptyFile(path: path)
            }
            throw .notACapture(path: path, detail: Self.describeOpenFailure(detail))
        }
        let source = PcapSource(handle: handle, name: path, isLive: false, decompressCookie: cookie)
        source.input.stdioBuffer = fileBuffer
        source.input.fd = fd
        source.input.size = isRegular ? Int64(st.st_size) : 0
        if mapsFile {
            source.mapped = MappedPcapReader(fd: fd, size: Int(st.st_size), handle: handle)
        }
        if let filter { try source.apply(filter: filter) }
        return source
    }

    /// What the decompressing stream of `cookie` failed with, as a detail ("cannot decompress: …").
    private static func decompressionError(_ cookie: UnsafeMutableRawPointer?) -> String? {
        PcapInputFile.decompressionFailure(cookie).map { "cannot decompress: \($0)" }
    }

    private static func describeOpenFailure(_ detail: String) -> String {
        if detail.contains("unknown file format") { return "unknown file format" }
        if detail.hasPrefix("truncated dump file") { return "the file header is cut short" }
        return detail
    }

    /// Compiles a BPF filter and applies it (live and offline alike).
    public func apply(filter: String) throws(CaptureError) {
        guard let handle else { return }
        var program = bpf_program()
        if pcap_compile(handle, &program, filter, 1, PCAP_NETMASK_UNKNOWN) != 0 {
            throw .badFilter(filter: filter, reason: String(cString: pcap_geterr(handle)))
        }
        defer { pcap_freecode(&program) }
        if pcap_setfilter(handle, &program) != 0 {
            throw .badFilter(filter: filter, reason: String(cString: pcap_geterr(handle)))
        }
        if mapped != nil {
            // The mapped reader runs its own copy (libpcap's runs on what is handed back to it).
            var own = bpf_program()
            if pcap_compile(handle, &own, filter, 1, PCAP_NETMASK_UNKNOWN) != 0 {
                throw .badFilter(filter: filter, reason: String(cString: pcap_geterr(handle)))
            }
            mapped!.setFilter(own)
        }
    }

    /// The next packet. Its bytes are valid until the next call.
    @inline(__always)
    public func next() -> ReadResult {
        if let pcapng {
            if _slowPath(held != nil) { return takeHeld() }
            return next(from: pcapng)
        }
        if mapped != nil {
            switch mapped!.next() {
            case .packet(let packet):
                packetsRead &+= 1
                bytesRead &+= UInt64(packet.bytes.count) &+ 16
                if let saver { saver.write(packet, dlt: dlt, snaplen: snaplen) }
                return .packet(packet)
            case .handOff(let offset):
                handOff(at: offset)
            case .failed(let message):
                input.retiredMapping = mapped!.mapping
                mapped = nil
                if let handle { pcap_close(handle) }
                handle = nil
                return .failed(message)
            }
        }
        guard let handle else { return .end }
        if _slowPath(held != nil) { return takeHeld() }
        if let failure = cutRecord.pendingFailure {
            cutRecord.pendingFailure = nil
            self.handle = nil
            pcap_close(handle)
            return .failed(failure)
        }
        var header: UnsafeMutablePointer<pcap_pkthdr>? = nil
        var data: UnsafePointer<UInt8>? = nil
        let rc = pcap_next_ex(handle, &header, &data)
        switch rc {
        case 1:
            guard let header, let data else { return .timeout }
            let h = header.pointee
            let caplen = Int(h.caplen)
            packetsRead &+= 1
            bytesRead &+= UInt64(caplen) &+ 16
            let ts = Timestamp(seconds: Int64(h.ts.tv_sec), nanoseconds: Int64(h.ts.tv_usec) &* nanosecondsPerTick)
            let packet = CapturedPacket(bytes: UnsafeRawBufferPointer(start: data, count: caplen), timestamp: ts, wireLength: Int(h.len))
            if let saver { saver.write(packet, dlt: dlt, snaplen: snaplen) }
            return .packet(packet)
        case 0:
            if selectableFD >= 0 {
                var pfd = pollfd(fd: selectableFD, events: Int16(POLLIN), revents: 0)
                _ = poll(&pfd, 1, Self.pollMilliseconds)
            }
            idleReads &+= 1
            return .timeout
        case -2:
            if let failure = input.failureAtEnd { return .failed(failure) }
            return .end
        default:
            let message = String(cString: pcap_geterr(handle))
            if let packet = recoverCutRecord(message) {
                cutRecord.pendingFailure = message
                if let saver { saver.write(packet, dlt: dlt, snaplen: snaplen) }
                return .packet(packet)
            }
            return .failed(input.explaining(message))
        }
    }

    /// The time of the next packet, read now and returned again by the next `next()`: a pipe
    /// cannot be probed before it is read (`CaptureProbe.isStream`), so the continuity of a set is
    /// checked on its first packet here. Nil: no packet, or a file read in place (probed instead).
    public func peekTime() -> Timestamp? {
        guard mapped == nil, held == nil else { return nil }
        let result = next()
        held = result
        if case .packet(let packet) = result { return packet.timestamp }
        return nil
    }

    private func takeHeld() -> ReadResult {
        defer { held = nil }
        return held!
    }

    /// libpcap reads on from the record at `offset`: what the mapped reader does not read exactly
    /// as libpcap would (a damaged or cut record), the end of the file, and what it grew by.
    private func handOff(at offset: Int) {
        input.retiredMapping = mapped!.mapping
        mapped = nil
        if let handle, let file = pcap_file(handle) {
            fseeko(file, off_t(offset), SEEK_SET)
        }
    }

    private func next(from reader: PcapngReader) -> ReadResult {
        while true {
            switch reader.next() {
            case .packet(let packet, let interface):
                packetsRead &+= 1
                bytesRead &+= UInt64(packet.bytes.count) &+ 32
                // By link type, not interface number: a new section numbers its interfaces anew.
                let dlt = reader.interfaces[interface].dlt
                packetDLT = dlt
                if let saver { saver.write(packet, dlt: dlt, snaplen: reader.interfaces[interface].snaplen) }
                return .packet(packet)
            case .secrets(let bytes):
                // Each block's key log as read (a block of 52 MiB is not copied again).
                if pendingSecrets == nil { pendingSecrets = [bytes] } else { pendingSecrets!.append(bytes) }
            case .end:
                if let failure = input.failureAtEnd { return .failed(failure) }
                self.pcapng = nil
                return .end
            case .failed(let message):
                self.pcapng = nil
                return .failed(input.explaining(message))
            }
        }
    }

    /// The key log text of each Decryption Secrets Block read so far, once.
    public func takeSecrets() -> [SecretsText]? {
        defer { pendingSecrets = nil }
        return pendingSecrets
    }

    /// A classic pcap file whose last record is cut short by the end of the file: libpcap refuses
    /// the record, but its header and the bytes that are there can still be read, so the packet is
    /// returned with the missing tail (which reassembly turns into a gap).
    private func recoverCutRecord(_ message: String) -> CapturedPacket? {
        guard input.decompressCookie == nil, !isLive, let handle, let file = pcap_file(handle),
              message.hasPrefix("truncated dump file; tried to read"), message.contains("captured bytes, only got ") else { return nil }
        guard let gotText = message.split(separator: " ").last, let got = Int(gotText), got > 0 else { return nil }
        let fd = fileno(file)
        var st = stat()
        guard fstat(fd, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG else { return nil }
        let size = Int(st.st_size)
        var magic: UInt32 = 0
        guard pread(fd, &magic, 4, 0) == 4 else { return nil }
        guard let (swapped, nanosecond) = CaptureFile.pcapForm(magic: magic) else { return nil }   // pcapng: not recovered
        let dataStart = size - got
        guard dataStart >= 24 + 16 else { return nil }
        var header = [UInt32](repeating: 0, count: 4)
        guard pread(fd, &header, 16, off_t(dataStart - 16)) == 16 else { return nil }
        let h = header.map { swapped ? $0.byteSwapped : $0 }
        guard Int(h[2]) > got else { return nil }
        cutRecord.buffer?.deallocate()
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: got, alignment: 8)
        cutRecord.buffer = buffer
        guard pread(fd, buffer.baseAddress, got, off_t(dataStart)) == got else { return nil }
        cutRecord.recovered = true
        packetsRead &+= 1
        let ts = Timestamp(seconds: Int64(h[0]), nanoseconds: nanosecond ? Int64(h[1]) : Int64(h[1]) * 1000)
        return CapturedPacket(bytes: UnsafeRawBufferPointer(buffer), timestamp: ts, wireLength: max(Int(h[3]), Int(h[2])))
    }

    /// How far into the file reading has come, in file bytes (compressed bytes for gzip).
    public var inputPosition: Int64 {
        if let offset = mapped?.offset { return Int64(offset) }
        guard input.fd >= 0, handle != nil else { return input.size }
        let p = lseek(input.fd, 0, SEEK_CUR)
        return p < 0 ? 0 : Int64(p)
    }

    /// Kernel and interface counters of a live capture.
    public func statistics() -> (received: UInt32, dropped: UInt32, interfaceDropped: UInt32)? {
        guard let handle, isLive else { return nil }
        var st = pcap_stat()
        guard pcap_stats(handle, &st) == 0 else { return nil }
        return (st.ps_recv, st.ps_drop, st.ps_ifdrop)
    }
}
