/// Frames one direction of a TLS connection into records (RFC 8446 §5.1), whatever the TCP
/// segmentation: a record may span segments and a segment may hold several records. Each record
/// is reported with the capture times of its first and last byte; its body is kept only when
/// asked (cleartext handshake records), so memory stays at one record at most.
final class TLSRecordReader {
    struct Record {
        /// What a held record costs beside its bytes (its place in the list, its times and
        /// offsets): counted toward the caps of those that hold records (`TLSKeyWait`,
        /// `TLSEarlyData`), so that a million empty records cannot be held for free.
        static let heldOverhead = 64

        var type: UInt8
        /// The body, when `keep` asked for it.
        var body: [UInt8]?
        var length: Int
        var firstByte: Timestamp
        var lastByte: Timestamp
        /// Part of the body was never captured: the record cannot be read (its bytes are counted).
        var lost = false
    }

    /// Largest record a peer may send: 2^14 plus the expansion TLS 1.2 allows (RFC 5246 §6.2.3).
    static let maxRecordLength = (1 << 14) + 2048

    private var header: [UInt8] = []
    private var type: UInt8 = 0
    private var length = 0
    private var remaining = 0
    private var inBody = false
    /// The body of the record being read, when it is kept; reused from record to record (its
    /// buffer is handed to the callback and is unique again once the callback returns).
    private var storage: [UInt8] = []
    private var keeping = false
    private var first: Timestamp = .zero
    /// Set when the bytes stop being TLS records (or a gap broke the framing): nothing more is read.
    private(set) var broken = false
    /// A record was begun and not finished (its header or body is still incomplete).
    var midRecord: Bool { !broken && (inBody || !header.isEmpty) }

    /// Whether `bytes` start like a TLS record: content type, version 3.x, a possible length.
    static func looksLikeRecord(_ bytes: UnsafeRawBufferPointer, handshakeType: UInt8? = nil) -> Bool {
        guard bytes.count >= 5, TLSContentType.known.contains(bytes[0]), bytes[1] == 3, bytes[2] <= 4 else { return false }
        let length = Int(bytes[3]) << 8 | Int(bytes[4])
        guard length > 0, length <= maxRecordLength else { return false }
        if let handshakeType {
            return bytes[0] == TLSContentType.handshake && bytes.count >= 6 && bytes[5] == handshakeType
        }
        return true
    }

    /// Bytes `looksLikeRecord` needs to recognise a handshake record: the header and the type.
    static let bytesToRecognise = 6

    /// Whether `bytes`, fewer than `bytesToRecognise`, may still begin a handshake record.
    static func mayBeginHandshakeRecord(_ bytes: UnsafeRawBufferPointer) -> Bool {
        (bytes.count < 1 || bytes[0] == 22) && (bytes.count < 2 || bytes[1] == 3) && (bytes.count < 3 || bytes[2] <= 4)
    }

    func feed(_ bytes: UnsafeRawBufferPointer, at ts: Timestamp, keep: (UInt8) -> Bool, record: (Record) -> Void) {
        var i = 0
        let n = bytes.count
        while i < n && !broken {
            if !inBody {
                if header.isEmpty { first = ts }
                let take = min(5 - header.count, n - i)
                header.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[i..<(i + take)]))
                i += take
                if header.count < 5 { return }
                type = header[0]
                length = Int(header[3]) << 8 | Int(header[4])
                guard (20...24).contains(type), header[1] == 3, length <= Self.maxRecordLength else {
                    broken = true
                    return
                }
                header.removeAll(keepingCapacity: true)
                remaining = length
                inBody = true
                keeping = keep(type)
                if keeping {
                    storage.removeAll(keepingCapacity: true)
                    storage.reserveCapacity(length)
                }
                if remaining == 0 { finishRecord(at: ts, record) }
            } else {
                let take = min(remaining, n - i)
                if keeping { storage.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[i..<(i + take)])) }
                i += take
                remaining -= take
                if remaining == 0 { finishRecord(at: ts, record) }
            }
        }
    }

    private var lost = false

    /// The last record's body went on (a batch of the decryption queue holds it): the next body
    /// is read into `replacement` instead of a copy of the same buffer.
    func bodyTaken(replacement: [UInt8]) {
        storage = replacement
    }

    private func finishRecord(at ts: Timestamp, _ record: (Record) -> Void) {
        inBody = false
        let b: [UInt8]? = keeping && !lost ? storage : nil
        keeping = false
        let wasLost = lost
        lost = false
        record(Record(type: type, body: b, length: length, firstByte: first, lastByte: ts, lost: wasLost))
    }

    /// Bytes that were never captured: inside a record's body they are skipped and the record is
    /// reported lost (counted, not readable); anywhere else the framing is lost.
    func gap(_ length: UInt64, at ts: Timestamp, record: (Record) -> Void) {
        guard !broken else { return }
        if inBody, length <= UInt64(remaining) {
            remaining -= Int(length)
            lost = true
            if remaining == 0 { finishRecord(at: ts, record) }
            return
        }
        broken = true
    }
}

/// Handshake messages (RFC 8446 §4) of one direction, reassembled from the bodies of cleartext
/// handshake records: a message may span records, and a record may hold several messages.
struct TLSHandshakeBuffer {
    /// A certificate chain fits; a larger handshake message is not read (flagged incomplete).
    static let limit = 1 << 16
    private var pending: [UInt8] = []
    private(set) var overflowed = false

    mutating func append(_ body: [UInt8], message: (UInt8, ArraySlice<UInt8>) -> Void) {
        guard !overflowed else { return }
        pending.append(contentsOf: body)
        var start = 0
        while pending.count - start >= 4 {
            let len = Int(pending[start + 1]) << 16 | Int(pending[start + 2]) << 8 | Int(pending[start + 3])
            guard len <= Self.limit else { overflowed = true; pending = []; return }
            guard pending.count - start - 4 >= len else { break }
            message(pending[start], pending[(start + 4)..<(start + 4 + len)])
            start += 4 + len
        }
        // Whole messages read: nothing kept (a ClientHello's buffer no longer stays with every
        // connection that sent only one).
        if start == pending.count { pending = [] } else if start > 0 { pending.removeFirst(start) }
        if pending.count > Self.limit { overflowed = true; pending = [] }
    }
}

/// Bounds-checked reading of handshake structures: every read fails (nil) instead of trapping.
struct TLSReader {
    private let bytes: ArraySlice<UInt8>
    private var at: Int

    init(_ bytes: ArraySlice<UInt8>) {
        self.bytes = bytes
        self.at = bytes.startIndex
    }

    var isAtEnd: Bool { at >= bytes.endIndex }

    mutating func u8() -> UInt8? {
        guard at < bytes.endIndex else { return nil }
        defer { at += 1 }
        return bytes[at]
    }

    mutating func u16() -> UInt16? {
        guard let a = u8(), let b = u8() else { return nil }
        return UInt16(a) << 8 | UInt16(b)
    }

    mutating func take(_ n: Int) -> ArraySlice<UInt8>? {
        guard n >= 0, bytes.endIndex - at >= n else { return nil }
        defer { at += n }
        return bytes[at..<(at + n)]
    }

    /// A vector with a length prefix of `lengthBytes` (1, 2 or 3).
    mutating func vector(_ lengthBytes: Int) -> ArraySlice<UInt8>? {
        var n = 0
        for _ in 0..<lengthBytes {
            guard let b = u8() else { return nil }
            n = n << 8 | Int(b)
        }
        return take(n)
    }

    /// An ALPN ProtocolNameList's names (RFC 7301 §3.1), in order.
    static func protocolNames(_ list: ArraySlice<UInt8>) -> [String] {
        var r = TLSReader(list)
        var names: [String] = []
        while let p = r.vector(1) { names.append(String(decoding: p, as: UTF8.self)) }
        return names
    }

    /// Extensions: (type, data) pairs, up to the end of the block.
    static func extensions(_ block: ArraySlice<UInt8>) -> [(UInt16, ArraySlice<UInt8>)] {
        var r = TLSReader(block)
        var out: [(UInt16, ArraySlice<UInt8>)] = []
        while !r.isAtEnd {
            guard let type = r.u16(), let data = r.vector(2) else { break }
            out.append((type, data))
        }
        return out
    }
}

/// TLS record content types (RFC 8446 §5.1, RFC 5246 §6.2.1, RFC 6520), by name where records
/// are read: a `switch` on a record's type reads `case TLSContentType.handshake:`.
enum TLSContentType {
    static let changeCipherSpec: UInt8 = 20
    static let alert: UInt8 = 21
    static let handshake: UInt8 = 22
    static let applicationData: UInt8 = 23
    static let heartbeat: UInt8 = 24
    /// The types a record may have.
    static let known: ClosedRange<UInt8> = 20...24
}

/// TLS handshake message types (RFC 8446 §4, RFC 5246 §7.4), as TLS records and QUIC's CRYPTO
/// frames carry them.
enum TLSHandshakeType {
    static let clientHello: UInt8 = 1
    static let serverHello: UInt8 = 2
    static let endOfEarlyData: UInt8 = 5
    static let encryptedExtensions: UInt8 = 8
    static let certificate: UInt8 = 11
    static let serverKeyExchange: UInt8 = 12
    static let finished: UInt8 = 20
    static let keyUpdate: UInt8 = 24
}
