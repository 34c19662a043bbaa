/// What opening one protected record gave: the one reading of a record, for the handshake (on
/// the pipeline's thread) and for application data (there, or on the decryption thread).
enum OpenedRecord {
    /// Application data: the plaintext is the output buffer's first `count` bytes.
    case data(Int)
    /// TLS 1.3 handshake messages (EncryptedExtensions, Finished, KeyUpdate, tickets): the
    /// output buffer's first `count` bytes.
    case handshake(Int)
    /// Authenticated, nothing to pass on (alerts, TLS 1.2 Finished, TLS 1.3 padding only).
    case other
    /// Not captured whole: it used a sequence number; its plaintext (about `estimate` bytes, for
    /// application data) is a gap.
    case lost(estimate: UInt64?)
    /// It does not authenticate: wrong keys, or tampered.
    case failed
    /// Not opened: an earlier record of its direction failed.
    case skipped

    /// Opens `r` with `p` into `out` (at least the record's size): RFC 8446 §5.2 (TLSInnerPlaintext:
    /// content, the real type, then zero padding) or RFC 5246 §6.2.3.
    static func open(_ r: TLSRecordReader.Record, with p: RecordProtection, tls13: Bool, cipher: TLSCipherParameters?,
                     into out: UnsafeMutableRawBufferPointer) -> OpenedRecord {
        guard let body = r.body, !r.lost else { return lost(r, p, tls13: tls13, cipher: cipher) }
        guard let n = p.open(type: r.type, version: 0x0303, body: body, into: out) else { return .failed }
        return content(of: r.type, UnsafeRawBufferPointer(rebasing: out[0..<n]), tls13: tls13)
    }

    /// `open`, where the record's body lies (the plaintext overwrites it): what came of it, and
    /// where in the body the plaintext starts.
    static func openInPlace(_ r: inout TLSRecordReader.Record, with p: RecordProtection, tls13: Bool,
                            cipher: TLSCipherParameters?) -> (OpenedRecord, start: Int) {
        guard r.body != nil, !r.lost else { return (lost(r, p, tls13: tls13, cipher: cipher), 0) }
        guard let range = p.openInPlace(type: r.type, version: 0x0303, body: &r.body!) else { return (.failed, 0) }
        let opened = r.body!.withUnsafeBytes { content(of: r.type, UnsafeRawBufferPointer(rebasing: $0[range]), tls13: tls13) }
        return (opened, range.lowerBound)
    }

    /// A record not captured whole: it used a sequence number; its plaintext is a gap.
    private static func lost(_ r: TLSRecordReader.Record, _ p: RecordProtection, tls13: Bool, cipher: TLSCipherParameters?) -> OpenedRecord {
        p.skip()
        guard r.type == TLSContentType.applicationData || tls13 else { return .lost(estimate: nil) }
        let overhead = cipher?.recordOverhead(tls13: tls13) ?? 16 + (tls13 ? 1 : 0)
        return .lost(estimate: UInt64(max(0, r.length - overhead)))
    }

    /// What an opened record holds, by its type (TLS 1.3: the inner type, after the content and
    /// before the zero padding); counts are from the plaintext's start.
    private static func content(of outerType: UInt8, _ plaintext: UnsafeRawBufferPointer, tls13: Bool) -> OpenedRecord {
        var end = plaintext.count
        var type = outerType
        if tls13 {
            while end > 0 && plaintext[end - 1] == 0 { end -= 1 }
            guard end > 0 else { return .other }
            end -= 1
            type = plaintext[end]
        }
        switch type {
        case TLSContentType.applicationData: return .data(end)
        case TLSContentType.handshake where tls13: return .handshake(end)
        default: return .other
        }
    }
}

/// One direction's decryption once its handshake is over: its record protection (whose sequence
/// numbers make the records' order matter) and, in TLS 1.3, the traffic secret that KeyUpdate
/// advances (RFC 8446 §4.6.3). Made on the pipeline's thread, then handed to the decryption
/// queue with the direction's records: from then on only the thread opening a batch touches it,
/// and batches are opened one after another, never two at once.
final class DirectionDecryptor: @unchecked Sendable {
    private var protection: RecordProtection
    private var secret: [UInt8]?
    private let cipher: TLSCipherParameters
    private let tls13: Bool
    private var handshake = TLSHandshakeBuffer()
    /// After the first record that does not authenticate, nothing more is opened.
    private var failed = false

    init(protection: RecordProtection, secret: [UInt8]?, cipher: TLSCipherParameters, tls13: Bool) {
        self.protection = protection
        self.secret = secret
        self.cipher = cipher
        self.tls13 = tls13
    }

    /// Opens the direction's next record into `out`: what came of it, KeyUpdate applied here.
    /// After a failure: `.failed` once, then `.skipped` (nothing more is read).
    func open(_ r: TLSRecordReader.Record, into out: UnsafeMutableRawBufferPointer) -> OpenedRecord {
        guard !failed else { return .skipped }
        let opened = OpenedRecord.open(r, with: protection, tls13: tls13, cipher: cipher, into: out)
        return apply(opened, UnsafeRawBufferPointer(out))
    }

    /// `open`, where the record's body lies: what came of it, and where its plaintext starts.
    func openInPlace(_ r: inout TLSRecordReader.Record) -> (OpenedRecord, start: Int) {
        guard !failed else { return (.skipped, 0) }
        let (opened, start) = OpenedRecord.openInPlace(&r, with: protection, tls13: tls13, cipher: cipher)
        guard case .handshake = opened, let body = r.body else { return (apply(opened, UnsafeRawBufferPointer(start: nil, count: 0)), start) }
        return (body.withUnsafeBytes { apply(opened, UnsafeRawBufferPointer(rebasing: $0[start...])) }, start)
    }

    /// A failure stops the direction; handshake messages (`plaintext` starts with them) are read
    /// for KeyUpdate.
    private func apply(_ opened: OpenedRecord, _ plaintext: UnsafeRawBufferPointer) -> OpenedRecord {
        switch opened {
        case .failed:
            failed = true
        case .handshake(let n):
            handshake.append(Array(UnsafeRawBufferPointer(rebasing: plaintext[0..<n]))) { type, _ in
                // KeyUpdate: application_traffic_secret_N+1 (RFC 8446 §7.2) from the next record on.
                guard type == TLSHandshakeType.keyUpdate, let s = secret,
                      let next = TrafficKeys.nextSecret(s, cipher: cipher, labels: .tls13),
                      let p = RecordProtection(tls13Secret: next, cipher: cipher) else { return }
                secret = next
                protection = p
            }
        default:
            break
        }
        return opened
    }
}
