import CPcap
#if canImport(Glibc)
import Glibc
#endif

/// Reads pcapng files block by block (draft-ietf-opsawg-pcapng), for what libpcap cannot do
/// with them: interfaces of different link types in one file (libpcap stops at the second
/// interface's block and the rest of the file is lost), and Decryption Secrets Blocks wherever
/// they are (libpcap does not hand them out).
///
/// Blocks read: Section Header (byte order; a new section forgets the interfaces), Interface
/// Description (link type, snaplen, `if_tsresol`, `if_tsoffset`), Enhanced, Simple and the
/// obsolete Packet Block, Decryption Secrets (TLS key logs). Other blocks are skipped by length.
/// A BPF filter is compiled for each interface's link type and run by libpcap
/// (`pcap_offline_filter`).
final class PcapngReader {
    struct Interface {
        var dlt: Int32
        var linkType: LinkType
        var snaplen: Int32
        /// Timestamp units per second (`if_tsresol`; 10^6 when absent).
        var unitsPerSecond: UInt64
        var offsetSeconds: Int64
        var filter: UnsafeMutablePointer<bpf_program>?
        /// A filter was given that cannot apply to this interface's link type, which icy-sniff
        /// does not decode either: none of its packets pass.
        var rejectsAll = false
    }

    enum Next {
        case packet(CapturedPacket, interface: Int)
        case secrets(SecretsText)
        case end
        case failed(String)
    }

    private let file: UnsafeMutablePointer<FILE>
    private var bigEndian = false
    private(set) var interfaces: [Interface] = []
    private var buffer: UnsafeMutableRawBufferPointer
    private let filterText: String?
    /// A block larger than this is taken for damage, not allocated.
    static let maxBlockLength = 64 << 20

    /// Opens on a stream positioned at the start of the file, and reads up to the first packet so
    /// that the interfaces written up front (as dumpcap and tshark write them) are known.
    init(file: UnsafeMutablePointer<FILE>, filter: String?) throws(CaptureError) {
        self.file = file
        self.filterText = filter
        buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 16, alignment: 8)
        try readUntilFirstPacket()
    }

    deinit {
        for i in interfaces.indices { freeFilter(&interfaces[i]) }
        buffer.deallocate()
    }

    /// The blocks read ahead at open time, delivered before anything else.
    private var readAhead: [Next] = []

    private func readUntilFirstPacket() throws(CaptureError) {
        while true {
            if let failure = filterFailure { throw failure }
            guard let block = readBlock() else { continue }
            switch block {
            case .failed(let message) where interfaces.isEmpty && readAhead.isEmpty:
                throw .notACapture(path: "", detail: message)
            case .secrets:
                readAhead.append(block)
            case .failed, .end, .packet:
                readAhead.append(block)
                return
            }
        }
    }

    private var filterFailure: CaptureError? = nil

    func next() -> Next {
        if !readAhead.isEmpty { return readAhead.removeFirst() }
        while true {
            let block = readBlock()
            if let failure = filterFailure {
                // An interface described mid-file whose link type the filter cannot apply to.
                filterFailure = nil
                return .failed(failure.message)
            }
            if let block { return block }
        }
    }

    private func u32(_ at: Int) -> UInt32 {
        let v = buffer.loadUnaligned(fromByteOffset: at, as: UInt32.self)
        return bigEndian ? UInt32(bigEndian: v) : UInt32(littleEndian: v)
    }

    private func u16(_ at: Int) -> UInt16 {
        let v = buffer.loadUnaligned(fromByteOffset: at, as: UInt16.self)
        return bigEndian ? UInt16(bigEndian: v) : UInt16(littleEndian: v)
    }

    private func readExactly(_ count: Int, at offset: Int) -> Int {
        guard count > 0 else { return 0 }
        return fread(buffer.baseAddress! + offset, 1, count, file)
    }

    private func ensureCapacity(_ count: Int) {
        guard count > buffer.count else { return }
        let bigger = UnsafeMutableRawBufferPointer.allocate(byteCount: max(count, buffer.count * 2), alignment: 8)
        bigger.copyMemory(from: UnsafeRawBufferPointer(buffer))
        buffer.deallocate()
        buffer = bigger
    }

    /// A buffer a large block grew gives its memory back before the next block (a 52 MB
    /// Decryption Secrets Block or custom block must not stay 52 MB of buffer for the run).
    private func shrinkAfterLargeBlock() {
        guard buffer.count > Self.keptBufferBytes else { return }
        buffer.deallocate()
        buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 16, alignment: 8)
    }
    static let keptBufferBytes = 1 << 20

    /// A Decryption Secrets Block's key log, copied 64 KiB at a time into an unlinked temporary
    /// file, where the key log indexes its lines by offset as it does a key log file's: a 52 MB
    /// block costs neither a 52 MB buffer nor 52 MB of lines in memory. Without a temporary file
    /// (no writable temporary directory), read into memory.
    private func readSecrets(length: Int) -> Next? {
        guard length >= 20, readExactly(8, at: 8) == 8 else { return .failed("a decryption secrets block is cut short") }
        let secretsType = u32(8), secretsLength = Int(u32(12))
        var rest = length - 16
        var secrets: SecretsText? = nil
        if secretsType == 0x544C_534B, secretsLength <= length - 20 {   // "TLSK"
            let cut = Next.failed("the last block is cut short (a decryption secrets block)")
            if let f = tmpfile() {
                let held = SecretsFile(f)
                var left = secretsLength
                while left > 0 {
                    let n = min(left, buffer.count)
                    guard readExactly(n, at: 0) == n else { return cut }
                    guard fwrite(buffer.baseAddress!, 1, n, f) == n else { return .failed("cannot hold a decryption secrets block: \(String(cString: strerror(errno)))") }
                    left -= n
                }
                guard fflush(f) == 0 else { return .failed("cannot hold a decryption secrets block: \(String(cString: strerror(errno)))") }
                secrets = .file(held)
            } else {
                let text = [UInt8](unsafeUninitializedCapacity: secretsLength) { out, count in
                    count = secretsLength == 0 ? 0 : fread(out.baseAddress!, 1, secretsLength, file)
                }
                guard text.count == secretsLength else { return cut }
                secrets = .bytes(text)
            }
            rest -= secretsLength
        }
        // Padding and options through the buffer in pieces, then the trailing length.
        guard rest >= 4 else { return .failed("a decryption secrets block is too short for its secrets") }
        rest -= 4
        while rest > 0 {
            let n = min(rest, buffer.count)
            guard readExactly(n, at: 0) == n else { return .failed("the last block is cut short (a decryption secrets block)") }
            rest -= n
        }
        guard readExactly(4, at: 0) == 4 else { return .failed("the last block is cut short (a decryption secrets block)") }
        guard u32(0) == UInt32(length) else { return .failed("a block's trailing length does not match its header") }
        return secrets.map { .secrets($0) }
    }

    /// One block: a packet, secrets, the end, a failure, or nil for a block that is not handed on.
    private func readBlock() -> Next? {
        shrinkAfterLargeBlock()
        let got = readExactly(8, at: 0)
        if got == 0 { return .end }
        guard got == 8 else { return .failed("the last block is cut short (\(got) of 8 header bytes)") }
        var type = u32(0)
        if buffer.load(fromByteOffset: 0, as: UInt32.self) == 0x0A0D0D0A {
            // A Section Header Block: its byte-order magic comes before its length can be read.
            guard readExactly(4, at: 8) == 4 else { return .failed("a section header is cut short") }
            switch buffer.load(fromByteOffset: 8, as: UInt32.self) {
            case 0x1A2B3C4D: bigEndian = false
            case 0x4D3C2B1A: bigEndian = true
            default: return .failed("a section header has no valid byte-order magic")
            }
            type = 0x0A0D0D0A
            for i in interfaces.indices { freeFilter(&interfaces[i]) }
            interfaces.removeAll()
        }
        let length = Int(u32(4))
        guard length >= 12, length % 4 == 0, length <= Self.maxBlockLength else {
            return .failed("a block has an invalid length (\(length))")
        }
        if type == 0x0A { return readSecrets(length: length) }
        ensureCapacity(length)
        let already = type == 0x0A0D0D0A ? 12 : 8
        let body = readExactly(length - already, at: already)
        if body < length - already {
            // Cut short by the end of the file: a packet whose header is there is still given,
            // with its missing tail (which reassembly turns into a gap); the damage comes next.
            let failure = Next.failed("the last block is cut short (\(already + body) of \(length) bytes)")
            if let partial = packet(type: type, available: already + body, complete: false), case .packet = partial {
                readAhead.append(failure)
                return partial
            }
            return failure
        }
        guard u32(length - 4) == UInt32(length) else { return .failed("a block's trailing length does not match its header") }
        switch type {
        case 0x0A0D0D0A:
            return nil
        case 1:
            guard length >= 20 else { return .failed("an interface description block is too short") }
            addInterface(length: length)
            return nil
        default:
            return packet(type: type, available: length, complete: true)
        }
    }

    /// An Enhanced (6), Simple (3) or obsolete Packet (2) Block in the buffer; nil for other
    /// blocks and for packets the filter rejects.
    private func packet(type: UInt32, available: Int, complete: Bool) -> Next? {
        let interfaceID: Int, timestamp: UInt64, dataOffset: Int, wireLength: Int
        var captured: Int
        switch type {
        case 6, 2:
            guard available >= 28 else { return nil }
            interfaceID = type == 6 ? Int(u32(8)) : Int(u16(8))
            timestamp = UInt64(u32(12)) << 32 | UInt64(u32(16))
            captured = Int(u32(20))
            wireLength = Int(u32(24))
            dataOffset = 28
        case 3:
            guard available >= 16 else { return nil }
            interfaceID = 0
            timestamp = 0
            wireLength = Int(u32(8))
            dataOffset = 12
            captured = min(wireLength, (complete ? available - 4 : available) - dataOffset)
        default:
            return nil
        }
        guard interfaceID < interfaces.count else {
            return .failed("a packet refers to interface \(interfaceID), which was not described")
        }
        let limit = complete ? available - 4 : available
        if captured > limit - dataOffset {
            guard !complete else { return .failed("a packet's captured length exceeds its block") }
            captured = limit - dataOffset
        }
        let interface = interfaces[interfaceID]
        if interface.rejectsAll { return nil }
        let bytes = UnsafeRawBufferPointer(rebasing: buffer[dataOffset..<(dataOffset + captured)])
        if let program = interface.filter {
            var header = pcap_pkthdr()
            header.caplen = UInt32(captured)
            header.len = UInt32(max(wireLength, captured))
            let accepted = pcap_offline_filter(program, &header, bytes.baseAddress!.assumingMemoryBound(to: UInt8.self))
            if accepted == 0 { return nil }
        }
        // Units to nanoseconds without overflow at any resolution: fraction < units, so the
        // quotient is below 10^9.
        let units = interface.unitsPerSecond
        let fraction = timestamp % units
        let nanoseconds = units.dividingFullWidth(fraction.multipliedFullWidth(by: 1_000_000_000)).quotient
        let ts = Timestamp(seconds: Int64(timestamp / units) &+ interface.offsetSeconds, nanoseconds: Int64(nanoseconds))
        return .packet(CapturedPacket(bytes: bytes, timestamp: ts, wireLength: max(wireLength, captured)), interface: interfaceID)
    }

    private func addInterface(length: Int) {
        let dlt = Int32(u16(8))
        let snaplen = Int32(bitPattern: u32(12))
        var units: UInt64 = 1_000_000
        var offset: Int64 = 0
        var at = 16
        while at + 4 <= length - 4 {
            let code = u16(at), optionLength = Int(u16(at + 2))
            if code == 0 { break }
            guard at + 4 + optionLength <= length - 4 else { break }
            if code == 9 && optionLength >= 1 {
                let v = buffer.load(fromByteOffset: at + 4, as: UInt8.self)
                let exponent = UInt64(v & 0x7f)
                if v & 0x80 == 0 {
                    if exponent <= 19 { units = (0..<exponent).reduce(1) { r, _ in r * 10 } }
                } else if exponent < 64 {
                    units = 1 << exponent
                }
            } else if code == 14 && optionLength == 8 {
                let raw = buffer.loadUnaligned(fromByteOffset: at + 4, as: UInt64.self)
                offset = Int64(bitPattern: bigEndian ? UInt64(bigEndian: raw) : UInt64(littleEndian: raw))
            }
            at += 4 + ((optionLength + 3) & ~3)
        }
        var interface = Interface(dlt: dlt, linkType: LinkType(dlt: dlt), snaplen: snaplen, unitsPerSecond: max(units, 1),
                                  offsetSeconds: offset, filter: nil)
        if let filterText {
            do throws(CaptureError) {
                interface.filter = try Self.compile(filterText, dlt: dlt, snaplen: snaplen)
            } catch {
                if interface.linkType.isSupported { filterFailure = error } else { interface.rejectsAll = true }
            }
        }
        interfaces.append(interface)
    }

    /// A filter compiled for one link type, as libpcap compiles it for a handle of that type.
    static func compile(_ filter: String, dlt: Int32, snaplen: Int32) throws(CaptureError) -> UnsafeMutablePointer<bpf_program> {
        guard let dead = pcap_open_dead(dlt, snaplen > 0 ? snaplen : 262_144) else {
            throw .badFilter(filter: filter, reason: "cannot compile for link type \(dlt)")
        }
        defer { pcap_close(dead) }
        let program = UnsafeMutablePointer<bpf_program>.allocate(capacity: 1)
        program.initialize(to: bpf_program())
        if pcap_compile(dead, program, filter, 1, PCAP_NETMASK_UNKNOWN) != 0 {
            let reason = String(cString: pcap_geterr(dead))
            program.deallocate()
            throw .badFilter(filter: filter, reason: reason)
        }
        return program
    }

    private func freeFilter(_ interface: inout Interface) {
        if let program = interface.filter {
            pcap_freecode(program)
            program.deallocate()
            interface.filter = nil
        }
    }
}

/// A pcapng Decryption Secrets Block's key log text, for `KeyLog.add`.
public enum SecretsText: Sendable {
    /// In an unlinked temporary file (closed, and gone, with the last reference).
    case file(SecretsFile)
    case bytes([UInt8])
}

public final class SecretsFile: @unchecked Sendable {
    let file: UnsafeMutablePointer<FILE>
    init(_ file: UnsafeMutablePointer<FILE>) { self.file = file }
    var descriptor: Int32 { fileno(file) }
    deinit { fclose(file) }
}
